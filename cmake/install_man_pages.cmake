# Runs at install time (component daemons; see install.cmake): the man pages made at build time
# (man_pages.cmake), naming the installed bin folder (in place of DDE_INSTALLED_BINDIR), gzip -9n (as
# Debian policy wants) to <prefix>/share/man/man1. (The mark is no @VAR@: cmake_install.cmake runs
# this under old policies, which would expand it.)
# Variables: DDE_MAN_PAGES, DDE_BINARY_DIR, DDE_INSTALL_BINDIR, DDE_INSTALL_MANDIR, DDE_GZIP.
string(MD5 prefix_key "${CMAKE_INSTALL_PREFIX}")
set(staging ${DDE_BINARY_DIR}/CMakeFiles/dde-man-${prefix_key})
file(MAKE_DIRECTORY ${staging})
foreach(page ${DDE_MAN_PAGES})
  get_filename_component(name ${page} NAME)
  file(READ ${page} text)
  string(REPLACE "DDE_INSTALLED_BINDIR/" "${CMAKE_INSTALL_PREFIX}/${DDE_INSTALL_BINDIR}/" text "${text}")
  file(WRITE ${staging}/${name} "${text}")
  execute_process(COMMAND ${DDE_GZIP} -9nf ${staging}/${name} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "gzip ${staging}/${name} failed")
  endif()
  file(INSTALL ${staging}/${name}.gz DESTINATION ${CMAKE_INSTALL_PREFIX}/${DDE_INSTALL_MANDIR}/man1)
endforeach()
