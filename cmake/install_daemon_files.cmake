# Runs at install time (component daemons; see install.cmake): installs the systemd units of
# deploy/systemd with this installation's paths, and the default flags they read. Under the prefix
# /usr (the .deb) the flags go to /etc/dde, elsewhere to <prefix>/etc/dde; units go to
# <prefix>/lib/systemd/system (systemd reads /usr/lib/... and /usr/local/lib/...).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc_dir /etc/dde)
  set(logrotate_dir /etc/logrotate.d)
else()
  set(etc_dir ${CMAKE_INSTALL_PREFIX}/etc/dde)
  set(logrotate_dir ${CMAKE_INSTALL_PREFIX}/etc/logrotate.d)
endif()
file(INSTALL ${DDE_SOURCE_DIR}/deploy/systemd/dde.logrotate DESTINATION ${logrotate_dir} RENAME dde)
# The daemons' user (units run as User=dde): systemd-sysusers creates it (the package's postinst runs it).
file(INSTALL ${DDE_SOURCE_DIR}/deploy/systemd/dde.sysusers DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/sysusers.d
  RENAME dde.conf)
file(INSTALL ${DDE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_PREFIX}/share/doc/dde)
string(MD5 prefix_key "${CMAKE_INSTALL_PREFIX}")
set(staging ${DDE_BINARY_DIR}/CMakeFiles/dde-units-${prefix_key})
file(MAKE_DIRECTORY ${staging})
foreach(daemon registry mqs activator)
  file(READ ${DDE_SOURCE_DIR}/deploy/systemd/dde-${daemon}.service unit)
  string(REPLACE "/usr/local/bin/" "${CMAKE_INSTALL_PREFIX}/${DDE_INSTALL_BINDIR}/" unit "${unit}")
  string(REPLACE "/etc/dde/" "${etc_dir}/" unit "${unit}")
  string(REPLACE "/usr/share/doc/dde/" "${CMAKE_INSTALL_PREFIX}/share/doc/dde/" unit "${unit}")
  file(WRITE ${staging}/dde-${daemon}.service "${unit}")
  file(INSTALL ${staging}/dde-${daemon}.service DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
  file(INSTALL ${DDE_SOURCE_DIR}/deploy/systemd/${daemon}.env DESTINATION ${etc_dir})
endforeach()
