# What `cmake --install build [--prefix DIR]` puts where (GNUInstallDirs):
#
#   bin/snowid, bin/snowidd                         component runtime
#   include/snowid/*.h, lib/libsnowid_*.a,          component development
#   lib/cmake/snowid/ (snowidConfig.cmake, its version file, the exported
#   targets snowid::*), lib/pkgconfig/snowid.pc, and the extension headers
#   include/snowid/ext/*.h (src/segment/CMakeLists.txt; outside the stable API)
#
# and, for the packaged service (cmake/Package.cmake), the systemd unit, the
# configuration, man pages and bash completion (component runtime).
#
# A library joins the CMake package with one line beside its add_library:
#
#   snowid_export(snowid_core core DEPENDENCIES Threads fmt)
#
# It is then installed as snowid::<name>, with the headers of its HEADERS
# file set (those under include/snowid/ that make up its public interface);
# DEPENDENCIES are the packages snowidConfig.cmake finds (find_dependency) so
# that its link interface resolves in a consumer. Every library it links,
# even privately (a static library carries them to the final link), must be
# exported too or be an imported target of one of those packages.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SNOWID_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/snowid)

function(snowid_export target name)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "DEPENDENCIES")
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS ${target} EXPORT snowidTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
          FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
  set_property(GLOBAL APPEND PROPERTY SNOWID_EXPORTED_TARGETS ${name})
  foreach(dependency IN LISTS arg_DEPENDENCIES)
    set_property(GLOBAL APPEND PROPERTY SNOWID_EXPORT_DEPENDENCIES ${dependency})
  endforeach()
endfunction()

# Called once, after every library was added: the export set, the package
# configuration files and snowid.pc.
function(snowid_install_package)
  get_property(names GLOBAL PROPERTY SNOWID_EXPORTED_TARGETS)
  get_property(dependencies GLOBAL PROPERTY SNOWID_EXPORT_DEPENDENCIES)
  list(REMOVE_DUPLICATES dependencies)
  set(SNOWID_FIND_DEPENDENCIES "")
  foreach(dependency IN LISTS dependencies)
    string(APPEND SNOWID_FIND_DEPENDENCIES "find_dependency(${dependency})\n")
  endforeach()
  list(JOIN names " snowid::" SNOWID_EXPORTED_NAMES)
  set(SNOWID_EXPORTED_NAMES "snowid::${SNOWID_EXPORTED_NAMES}")

  install(EXPORT snowidTargets NAMESPACE snowid:: DESTINATION ${SNOWID_INSTALL_CMAKEDIR}
          COMPONENT development)
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/snowidConfig.cmake.in
    ${PROJECT_BINARY_DIR}/snowidConfig.cmake
    INSTALL_DESTINATION ${SNOWID_INSTALL_CMAKEDIR})
  # 0.x: a minor release may change the API, so only the same minor matches.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/snowidConfigVersion.cmake
                                   COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/snowidConfig.cmake
                ${PROJECT_BINARY_DIR}/snowidConfigVersion.cmake
          DESTINATION ${SNOWID_INSTALL_CMAKEDIR} COMPONENT development)

  # pkg-config: snowid::core only. The library is static, so what it links
  # (fmt, libcrypto, threads) is in the .private fields: `pkg-config --static --libs`.
  file(RELATIVE_PATH SNOWID_PC_PREFIX_FROM_PCFILEDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig
       /prefix)
  string(REGEX REPLACE "/$" "" SNOWID_PC_PREFIX_FROM_PCFILEDIR "${SNOWID_PC_PREFIX_FROM_PCFILEDIR}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/snowid.pc.in ${PROJECT_BINARY_DIR}/snowid.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/snowid.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
endfunction()
