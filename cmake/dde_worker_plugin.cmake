# What makes a target a DDE worker plugin. Shared by DDE's own build (CMakeLists.txt) and the
# installed SDK (ddeConfig.cmake), so that in-tree and out-of-tree workers are built alike.

# dde_worker_plugin(TARGET): turns the MODULE library TARGET into a plugin the isolate-system host
# loads: named lib<TARGET>.so; exporting only its C entry points (dde_plugin_abi_version,
# dde_create_worker, dde_destroy_worker from DDE_WORKER, or a router's), whatever it links, through
# hidden visibility and a version script; and no STB_GNU_UNIQUE symbols. GCC marks template and
# inline statics STB_GNU_UNIQUE, and a library holding one is never unloaded by dlclose: a hot swap
# would keep running the old code.
set(DDE_WORKER_PLUGIN_MAP ${CMAKE_CURRENT_LIST_DIR}/dde_worker_plugin.map)
function(dde_worker_plugin target)
  target_link_libraries(${target} PRIVATE dde::worker_api)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${DDE_WORKER_PLUGIN_MAP})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-gnu-unique>)
  target_link_options(${target} PRIVATE "LINKER:--version-script=${DDE_WORKER_PLUGIN_MAP}")
endfunction()
