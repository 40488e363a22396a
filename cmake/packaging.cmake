# `cpack` (run in the build directory): cuaudit-VERSION-Linux.tar.gz and cuaudit_VERSION_amd64.deb,
# holding the tool, the two libraries it loads into programs, the man page, the licence and the
# third-party notices.
# Nothing else is needed at run time: the tool links its C++ runtime statically; the injection
# library finds CUPTI in the CUDA installation of the machine it runs on (RPATH and the driver's
# search path).
install(FILES ${PROJECT_SOURCE_DIR}/docs/cuaudit.1 DESTINATION share/man/man1)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/cuaudit)
include(${CMAKE_CURRENT_LIST_DIR}/third_party_notices.cmake)  # THIRD_PARTY_NOTICES.txt beside them

set(CPACK_PACKAGE_NAME cuaudit)
set(CPACK_PACKAGE_VENDOR "the cuaudit authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "CUDA memory leak and misuse checker")
set(CPACK_PACKAGE_DESCRIPTION "Finds CUDA memory leaks, mismatched and double frees, misaligned and stale kernel launch parameters and unchecked CUDA errors, with host call stacks; reports as text, JSON, SARIF, JUnit and HTML.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "the cuaudit authors")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# libc only: the tool's C++ runtime is static, and the CUDA driver and CUPTI are not Debian packages
# on most GPU machines, so they are not declared.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
