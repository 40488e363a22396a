# Read by CPack once per generator (CPACK_PROJECT_CONFIG_FILE). The .deb leaves out the copies of
# elfutils' libraries that the .tar.gz carries (component elfutils, tool/CMakeLists.txt): it
# depends on Debian's libdw1 and libelf1 instead (policy 4.13: no copies of other packages' code).
# CPACK_INSTALL_CMAKE_PROJECTS is (build directory, project, component, subdirectory): ALL becomes
# the files installed without a component.
if(CPACK_GENERATOR STREQUAL "DEB")
  string(REPLACE ";ALL;" ";Unspecified;" CPACK_INSTALL_CMAKE_PROJECTS "${CPACK_INSTALL_CMAKE_PROJECTS}")
endif()
