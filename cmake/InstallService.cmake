# Run by `cmake --install` and CPack (component runtime), with the prefix of
# that install: writes snowidd's systemd unit with the binary and
# configuration paths of that prefix, and the configuration. Under /usr (the
# Debian package) the configuration is /etc/snowid/snowid.toml, as the FHS
# wants; under any other prefix it stays inside it (<prefix>/etc/snowid).
# Set before: SNOWID_SOURCE_DIR, SNOWID_GENERATED_DIR, SNOWID_BINDIR.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc /etc)
else()
  set(etc ${CMAKE_INSTALL_PREFIX}/etc)
endif()

# The unit in the repository is the packaged one (/usr/bin, /etc).
file(READ ${SNOWID_SOURCE_DIR}/deploy/systemd/snowidd.service unit)
string(REPLACE "/usr/bin/snowidd" "${CMAKE_INSTALL_PREFIX}/${SNOWID_BINDIR}/snowidd" unit
       "${unit}")
string(REPLACE "/etc/snowid/" "${etc}/snowid/" unit "${unit}")
file(WRITE ${SNOWID_GENERATED_DIR}/install/snowidd.service "${unit}")

file(INSTALL ${SNOWID_GENERATED_DIR}/install/snowidd.service
     DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL ${SNOWID_GENERATED_DIR}/snowid.toml DESTINATION ${etc}/snowid
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
