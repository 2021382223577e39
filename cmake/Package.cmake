# The service around the binaries, installed with them (component runtime):
# the systemd unit, /etc/snowid/snowid.toml, the man pages snowid(1) and
# snowidd(8), bash completion for snowid and the system user's sysusers.d
# entry; and the Debian package of all that (CPack):
#
#   cmake --build build --target package    build/snowid_<version>_amd64.deb
#
# (scripts/package.sh builds it). The .deb installs to /usr and /etc whatever
# CMAKE_INSTALL_PREFIX the build has, and holds the runtime component only:
# the library, headers and CMake package are for `cmake --install`.
set(_generated ${PROJECT_BINARY_DIR}/deploy)
file(MAKE_DIRECTORY ${_generated})

# The configuration: snowid.example.toml with the state in /var/lib/snowid,
# the unit's StateDirectory=, instead of ./.snowid (relative to whatever the
# working directory is).
file(READ ${PROJECT_SOURCE_DIR}/snowid.example.toml _config)
set(_example_state_dir "state_dir = \"./.snowid\"")
string(FIND "${_config}" "${_example_state_dir}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "snowid.example.toml: no line ${_example_state_dir} to point at /var/lib/snowid")
endif()
string(REPLACE "${_example_state_dir}" "state_dir = \"/var/lib/snowid\"" _config "${_config}")
file(WRITE ${_generated}/snowid.toml.new "${_config}")
configure_file(${_generated}/snowid.toml.new ${_generated}/snowid.toml COPYONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/snowid.example.toml)

# Man pages from each binary's --help and --version (help2man), and the bash
# completion from snowid's --help: both follow the binaries, so they cannot
# disagree with them. Without help2man (not needed to build or run snowid)
# there are no man pages, and the package test fails.
#
# The sanitizer builds stop here: they neither install nor package, and their
# binaries may report at exit, which would fail help2man.
if(SNOWID_SANITIZE)
  return()
endif()
find_program(HELP2MAN help2man)
set(_man1 ${_generated}/snowid.1.gz)
set(_man8 ${_generated}/snowidd.8.gz)
set(_completion ${_generated}/snowid.bash-completion)
if(HELP2MAN)
  add_custom_command(
    OUTPUT ${_man1}
    COMMAND ${HELP2MAN} --no-info --section=1 --help-option=--help-all
      --version-string=${PROJECT_VERSION}
      "--name=unique, time-ordered 64-bit IDs: generate, decode, check, manage"
      --output=${_generated}/snowid.1 $<TARGET_FILE:snowid>
    COMMAND gzip -9nf ${_generated}/snowid.1
    DEPENDS snowid
    COMMENT "Generating snowid(1) with help2man" VERBATIM)
  add_custom_command(
    OUTPUT ${_man8}
    COMMAND ${HELP2MAN} --no-info --section=8 --version-string=${PROJECT_VERSION}
      "--name=the snowid unique ID server (HTTP, gRPC, Thrift, RESP)"
      --output=${_generated}/snowidd.8 $<TARGET_FILE:snowidd>
    COMMAND gzip -9nf ${_generated}/snowidd.8
    DEPENDS snowidd
    COMMENT "Generating snowidd(8) with help2man" VERBATIM)
  add_custom_target(snowid_man_pages ALL DEPENDS ${_man1} ${_man8})
  install(FILES ${_man1} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
  install(FILES ${_man8} DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT runtime)
else()
  message(STATUS "help2man not found: no man pages (apt-get install help2man)")
endif()
add_custom_command(
  OUTPUT ${_completion}
  COMMAND ${PROJECT_SOURCE_DIR}/deploy/bash-completion/generate.sh $<TARGET_FILE:snowid>
    ${_completion}
  DEPENDS snowid ${PROJECT_SOURCE_DIR}/deploy/bash-completion/generate.sh
  COMMENT "Generating snowid's bash completion from its --help" VERBATIM)
add_custom_target(snowid_bash_completion ALL DEPENDS ${_completion})

install(FILES ${_completion} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME snowid COMPONENT runtime)
# The unit and the configuration, with the paths of the prefix installed to.
install(CODE "set(SNOWID_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
set(SNOWID_GENERATED_DIR \"${_generated}\")
set(SNOWID_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
include(\"${PROJECT_SOURCE_DIR}/cmake/InstallService.cmake\")" COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/snowid.sysusers DESTINATION lib/sysusers.d
        RENAME snowid.conf COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT runtime)

# The Debian package. Depends: from dpkg-shlibdeps (the libraries the
# binaries load), so no -dev package and nothing the tests use.
set(CPACK_PACKAGE_NAME snowid)
set(CPACK_PACKAGE_VENDOR snowid)
set(CPACK_PACKAGE_CONTACT "snowid developers <dev@snowid.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "unique 64-bit ID server (Snowflake layouts) and CLI")
set(CPACK_PACKAGE_DESCRIPTION
    "snowidd hands out unique, time-ordered 64-bit IDs (Twitter Snowflake and other
layouts), UUIDv7, ULID and ObjectId, and dense segment numbers, over HTTP/JSON,
gRPC, Twitter's Snowflake Thrift service and the Redis protocol. It survives
clock steps back and crashes without repeating an ID, and leases node ids from
etcd, Redis or ZooKeeper in cluster mode. The snowid command generates,
decodes and checks IDs and manages segment tags and node-id claims.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
# Whatever CMAKE_INSTALL_PREFIX the build has, the package installs to /usr
# (and /etc: cmake/InstallService.cmake); DESTDIR staging lets that script
# see the prefix itself.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL runtime)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
# postinst creates the snowid user with systemd-sysusers, or adduser.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd | adduser")
include(CPack)
