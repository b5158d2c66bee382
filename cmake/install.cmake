# Install rules, in two components:
#   dev      the SDK: public headers, dde::worker_api, dde::core and the CMake package, so that
#            another project does find_package(dde) and dde_add_worker(...). Installs alone with
#            `cmake --install build --component dev --prefix DIR`.
#   daemons  the executables, the sample worker plugins, systemd units and their default flags
#            (/etc/dde/<daemon>.env when the prefix is /usr, else <prefix>/etc/dde).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# --- dev: the SDK ---
set(DDE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/dde)
file(STRINGS framework/include/dde/worker.hpp abi_line REGEX "^#define DDE_ABI_VERSION [0-9]+$")
string(REGEX REPLACE "^#define DDE_ABI_VERSION " "" DDE_ABI_VERSION "${abi_line}")

set_target_properties(dde_worker_api PROPERTIES EXPORT_NAME worker_api)
set_target_properties(dde_core PROPERTIES EXPORT_NAME core)
install(TARGETS dde_worker_api dde_core EXPORT dde-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# The SDK's headers are framework/include/dde/ as a whole: the worker API, and what dde::core offers a
# tool that talks to DDE (names, envelope codecs, logging, WebSocket/HTTP clients). The daemons' own
# headers live in each library's include/ and are never installed; tests/sdk checks both, and that
# each installed header compiles alone.
install(DIRECTORY framework/include/dde DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.hpp")
# A stripped install (cmake --install --strip, cpack) keeps the archive's symbols but drops its
# debug information (nine tenths of its size).
install(CODE "if(CMAKE_INSTALL_DO_STRIP)
    execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
      \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:dde_core>\")
  endif()" COMPONENT dev)
install(EXPORT dde-targets NAMESPACE dde:: DESTINATION ${DDE_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(cmake/ddeConfig.cmake.in ${CMAKE_BINARY_DIR}/sdk/ddeConfig.cmake
  INSTALL_DESTINATION ${DDE_INSTALL_CMAKEDIR} NO_SET_AND_CHECK_MACRO)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/sdk/ddeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/sdk/ddeConfig.cmake ${CMAKE_BINARY_DIR}/sdk/ddeConfigVersion.cmake
  cmake/dde_worker_plugin.cmake cmake/dde_worker_plugin.map
  DESTINATION ${DDE_INSTALL_CMAKEDIR} COMPONENT dev)

# --- daemons ---
install(TARGETS dde-registry dde-mqs dde-activator dde-isolate-system ddectl
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemons)
install(TARGETS producer consumer requester supplier echo_v1 echo_v2 throttler api_caller
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/dde/workers COMPONENT daemons)
# Their man pages (help2man; none without it), made at build time.
include(cmake/man_pages.cmake)
# The units, flags and man pages name paths only known at install time (the prefix): scripts write them.
find_program(DDE_GZIP gzip REQUIRED)
install(CODE "set(DDE_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
  set(DDE_BINARY_DIR \"${CMAKE_BINARY_DIR}\")
  set(DDE_INSTALL_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(DDE_INSTALL_MANDIR \"${CMAKE_INSTALL_MANDIR}\")
  set(DDE_MAN_PAGES \"${DDE_MAN_PAGES}\")
  set(DDE_GZIP \"${DDE_GZIP}\")" COMPONENT daemons)
install(SCRIPT cmake/install_daemon_files.cmake COMPONENT daemons)
install(SCRIPT cmake/install_man_pages.cmake COMPONENT daemons)
