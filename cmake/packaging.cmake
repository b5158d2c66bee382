# Debian packages, built from an existing build folder without rebuilding: `cpack -B DIR` there.
#   dde      the daemons, ddectl, the sample worker plugins (/usr/lib/dde/workers), systemd units and
#            their default flags (/etc/dde/<daemon>.env, conffiles)
#   dde-dev  the SDK (headers, dde::worker_api, dde::core, find_package(dde))
# Dependencies: dpkg-shlibdeps computes the daemons' (from the libraries they link) when it is
# installed (package dpkg-dev); otherwise the Debian 12 names below are declared.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dde)
set(CPACK_PACKAGE_VENDOR "DDE")
set(CPACK_PACKAGE_CONTACT "DDE maintainers <dde@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "DDE, a distributed actor framework over RabbitMQ")
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
set(CPACK_DEBIAN_DAEMONS_DESCRIPTION
  "DDE daemons: registry, message-queuing system, activator, isolate-system host
The registry (REST API), the message-queuing system between isolate systems and RabbitMQ,
the per-node activator and the isolate-system host, and ddectl; systemd units (not enabled)
with their default flags in /etc/dde; the sample worker plugins in /usr/lib/dde/workers.")
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
  "DDE SDK: write DDE worker plugins in projects of your own
The worker API headers, the dde::core library and a CMake package: find_package(dde)
and dde_add_worker(my_worker my_worker.cpp) build a plugin the isolate systems load.")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "nlohmann-json3-dev (>= 3.10), libboost-dev (>= 1.74), libspdlog-dev, uuid-dev, liburiparser-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "cmake (>= 3.20), g++")

include(CPack)
