# Man pages of the packaged executables, made from their --help and --version by help2man once they
# are built (target dde_man_pages, part of `all`); the install step (install_man_pages.cmake) puts
# them, gzip -9n, in share/man/man1. Without help2man there are none (deploy/install-deps.sh
# installs it, so CI always has them, and tests/sdk/lintian_test.sh checks the packaged ones).
find_program(DDE_HELP2MAN help2man)
set(DDE_MAN_PAGES "")
if(NOT DDE_HELP2MAN)
  message(STATUS "help2man not found: no man pages")
  return()
endif()

# program -> the NAME line's description
set(dde_man_dde-registry "the DDE registry: REST API of the cluster, its nodes and pools")
set(dde_man_dde-mqs "the DDE message-queuing system between isolate systems and RabbitMQ")
set(dde_man_dde-activator "the DDE node daemon: runs isolate systems and hosts remote workers")
set(dde_man_dde-isolate-system "the DDE isolate-system host: runs pools of worker plugins")
set(dde_man_ddectl "command-line client of the DDE registry's REST API")
foreach(program dde-registry dde-mqs dde-activator dde-isolate-system ddectl)
  set(page ${CMAKE_BINARY_DIR}/man/${program}.1)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -DHELP2MAN=${DDE_HELP2MAN} -DPROGRAM=$<TARGET_FILE:${program}>
      "-DDESCRIPTION=${dde_man_${program}}" -DOUTPUT=${page} -P ${CMAKE_SOURCE_DIR}/cmake/make_man_page.cmake
    DEPENDS ${program} ${CMAKE_SOURCE_DIR}/cmake/make_man_page.cmake
    COMMENT "Generating the man page of ${program} (help2man)" VERBATIM)
  list(APPEND DDE_MAN_PAGES ${page})
endforeach()
add_custom_target(dde_man_pages ALL DEPENDS ${DDE_MAN_PAGES})
