# Debian packages, built from an existing build folder without rebuilding: `cpack -B DIR` there.
#   dde      the daemons, ddectl, the sample worker plugins (/usr/lib/dde/workers), systemd units and
#            their default flags (/etc/dde/<daemon>.env, conffiles)
#   dde-dev  the SDK (headers, dde::worker_api, dde::core, find_package(dde))
# Dependencies: dpkg-shlibdeps computes the daemons' (from the libraries they link) when it is
# installed (package dpkg-dev); otherwise the Debian 12 names below are declared.
# Both are lintian-clean (tests/sdk/lintian_test.sh): each has its copyright and Debian changelog
# (deploy/debian), the daemons their man pages (man_pages.cmake), the binaries hardening flags
# (hardening.cmake); deploy/debian/*.lintian-overrides override only tags that do not apply.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dde)
set(CPACK_PACKAGE_VENDOR "DDE")
set(CPACK_PACKAGE_CONTACT "DDE maintainers <dde-maintainers@example.org>")
# Install with DESTDIR, so CMAKE_INSTALL_PREFIX is /usr while the package is staged: the units then
# name /usr/bin and the flags land in /etc/dde (cmake/install_daemon_files.cmake).
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL daemons dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)

set(CPACK_DEBIAN_DAEMONS_PACKAGE_NAME dde)
set(CPACK_DEBIAN_DAEMONS_PACKAGE_SECTION net)
# Descriptions: a synopsis, then lines of at most 80 characters (lintian). No
# CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it before each synopsis, as a second one.
set(CPACK_DEBIAN_DAEMONS_DESCRIPTION
  "distributed actor framework over RabbitMQ: daemons and ddectl
DDE runs actors (workers, loaded from plugins) in pools on the nodes of a
cluster, their messages carried by RabbitMQ. This package holds its daemons:
the registry (the cluster's REST API), the message-queuing system between the
isolate systems and RabbitMQ, the activator of each node and the isolate-system
host; ddectl, the registry's command-line client; systemd units (not enabled)
with their default flags in /etc/dde; the sample worker plugins.")
find_program(DDE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DDE_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_DAEMONS_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_DAEMONS_PACKAGE_DEPENDS
    "libc6, libgcc-s1, libstdc++6, librabbitmq4, libspdlog1.1, libfmt9, libssl3, libuuid1, liburiparser1")
endif()
set(CPACK_DEBIAN_DAEMONS_PACKAGE_RECOMMENDS "rabbitmq-server")
set(dde_conffiles "/etc/dde/registry.env\n/etc/dde/mqs.env\n/etc/dde/activator.env\n/etc/logrotate.d/dde\n")
file(WRITE ${CMAKE_BINARY_DIR}/sdk/debian-daemons/conffiles "${dde_conffiles}")
# postinst: creates the daemons' user through systemd-sysusers (deploy/systemd/dde.sysusers).
set(CPACK_DEBIAN_DAEMONS_PACKAGE_CONTROL_EXTRA
  "${CMAKE_BINARY_DIR}/sdk/debian-daemons/conffiles;${CMAKE_SOURCE_DIR}/deploy/systemd/postinst")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME dde-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "distributed actor framework over RabbitMQ: SDK for worker plugins
DDE runs actors (workers, loaded from plugins) in pools on the nodes of a
cluster, their messages carried by RabbitMQ. This package holds what a project
of your own needs to write worker plugins: the worker API headers, the
dde::core library and a CMake package, with which find_package(dde) and
dde_add_worker(my_worker my_worker.cpp) build a plugin that isolate systems
load.")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "nlohmann-json3-dev (>= 3.10), libboost-dev (>= 1.74), libspdlog-dev, uuid-dev, liburiparser-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "cmake (>= 3.20), g++")

# /usr/share/doc/<package>: the copyright (machine-readable, DEP-5) and the Debian changelog
# (gzip -9n), whose newest entry must name the packages' version; lintian overrides in
# /usr/share/lintian/overrides/<package>.
set(dde_deb_version "${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
set(dde_packages dde dde-dev)  # of the components in CPACK_COMPONENTS_ALL
file(STRINGS deploy/debian/changelog changelog_top LIMIT_COUNT 1)
if(NOT changelog_top MATCHES "^dde \\(${dde_deb_version}\\) ")
  message(FATAL_ERROR "deploy/debian/changelog starts with \"${changelog_top}\": add an entry for ${dde_deb_version}")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/deploy/debian/changelog)
execute_process(COMMAND ${DDE_GZIP} -9nc ${CMAKE_SOURCE_DIR}/deploy/debian/changelog
  OUTPUT_FILE ${CMAKE_BINARY_DIR}/sdk/changelog.Debian.gz COMMAND_ERROR_IS_FATAL ANY)
foreach(component package IN ZIP_LISTS CPACK_COMPONENTS_ALL dde_packages)
  install(FILES deploy/debian/copyright ${CMAKE_BINARY_DIR}/sdk/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
  if(EXISTS ${CMAKE_SOURCE_DIR}/deploy/debian/${package}.lintian-overrides)
    install(FILES deploy/debian/${package}.lintian-overrides
      DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME ${package} COMPONENT ${component})
  endif()
endforeach()

include(CPack)
