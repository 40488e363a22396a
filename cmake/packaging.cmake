# Who the .deb names as its maintainer: a packager sets their own (the default's .invalid domain,
# RFC 2606, is no one's address).
set(CUAUDIT_MAINTAINER "cuaudit maintainers <maintainers@cuaudit.invalid>" CACHE STRING "the .deb's Maintainer")

# `cpack` (run in the build directory): cuaudit-VERSION-Linux.tar.gz and cuaudit_VERSION_amd64.deb,
# holding the tool, the two libraries it loads into programs, the man page, the licence and the
# third-party notices; the .tar.gz also elfutils' libdw and libelf (tool/CMakeLists.txt).
# Nothing else is needed at run time: the tool links its C++ runtime statically; the injection
# library finds CUPTI in the CUDA installation of the machine it runs on (RPATH and the driver's
# search path).
# Man pages are installed compressed (Debian policy 12.1): gzip -9n, no name or time inside, so the
# file is the same on every build.
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/cuaudit.1.gz
                   COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/docs/cuaudit.1 > ${CMAKE_BINARY_DIR}/cuaudit.1.gz
                   DEPENDS ${PROJECT_SOURCE_DIR}/docs/cuaudit.1 VERBATIM)
add_custom_target(cuaudit_man_page ALL DEPENDS ${CMAKE_BINARY_DIR}/cuaudit.1.gz)
install(FILES ${CMAKE_BINARY_DIR}/cuaudit.1.gz DESTINATION share/man/man1)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/cuaudit)
# The documentation --help, `help COMMAND`, the man page and the README name, where the README's
# relative links (docs/X.md) find it.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/cuaudit/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "*.png" PATTERN "*.yml")
# Debian's copyright file (policy 12.5): cuaudit's own licence, and where the notices of what it
# carries are.
file(READ ${PROJECT_SOURCE_DIR}/LICENSE CUAUDIT_LICENSE_TEXT)
# The Apache licence itself is Debian's /usr/share/common-licenses/Apache-2.0 (and LICENSE beside
# this file): the copyright file names it rather than repeating it.
file(WRITE ${CMAKE_BINARY_DIR}/copyright
     "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
     "Upstream-Name: cuaudit\n\n"
     "Files: *\n"
     "Copyright: 2026 the cuaudit authors\n"
     "License: Apache-2.0\n"
     " On Debian systems, the complete text of the Apache License 2.0 is in\n"
     " /usr/share/common-licenses/Apache-2.0, and in LICENSE beside this file.\n"
     " .\n"
     " cuaudit carries code of other libraries, each under its own licence: their\n"
     " notices are in /usr/share/doc/cuaudit/THIRD_PARTY_NOTICES.txt.\n")
install(FILES ${CMAKE_BINARY_DIR}/copyright DESTINATION share/doc/cuaudit)
# A native package's changelog (policy 12.7), compressed as the man page.
string(TIMESTAMP CUAUDIT_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${CMAKE_BINARY_DIR}/changelog
     "cuaudit (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Built from the cuaudit source tree; its history is the project's git log.\n\n"
     " -- ${CUAUDIT_MAINTAINER}  ${CUAUDIT_CHANGELOG_DATE}\n")
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/changelog.gz
                   COMMAND gzip -9n -c ${CMAKE_BINARY_DIR}/changelog > ${CMAKE_BINARY_DIR}/changelog.gz
                   DEPENDS ${CMAKE_BINARY_DIR}/changelog VERBATIM)
add_custom_target(cuaudit_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/changelog.gz)
install(FILES ${CMAKE_BINARY_DIR}/changelog.gz DESTINATION share/doc/cuaudit)
include(${CMAKE_CURRENT_LIST_DIR}/third_party_notices.cmake)  # THIRD_PARTY_NOTICES.txt beside them

set(CPACK_PACKAGE_NAME cuaudit)
set(CPACK_PACKAGE_VENDOR "the cuaudit authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "CUDA memory leak and misuse checker")
# The .deb's extended description: lines of at most 80 characters (lintian).
set(CPACK_PACKAGE_DESCRIPTION "Finds CUDA memory leaks, mismatched and double frees, misaligned and stale
kernel launch parameters and unchecked CUDA errors, with host call stacks;
reports as text, JSON, SARIF, JUnit, HTML, pprof and PyTorch memory snapshots.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CUAUDIT_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The tool's C++ runtime is static; elfutils (LGPL: shared, replaceable), zlib and expat are
# Debian's (the .tar.gz carries elfutils' instead: cmake/cpack_generators.cmake). The CUDA driver and
# CUPTI are not Debian packages on most GPU machines, so they are not declared.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libdw1 (>= 0.188), libelf1 (>= 0.188), zlib1g (>= 1:1.2.3), libexpat1 (>= 2.1)")
# Loaded when DEBUGINFOD_URLS is set, for the debug files of stripped libraries (docs/REPORTS.md).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libdebuginfod1")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/cpack_generators.cmake)
# Lintian's word on the injection's run path, with the reason (Debian policy 10.2 asks for none): one
# line per entry of the run path this build really has. CUDAToolkit_LIBRARY_DIR is where CMake found
# the toolkit, /usr/local/cuda/lib on one machine and /usr/local/cuda-13.0/lib on another.
if(TARGET cuaudit-injection)
  get_target_property(injection_rpath cuaudit-injection INSTALL_RPATH)
  file(READ ${CMAKE_CURRENT_LIST_DIR}/lintian-overrides lintian_overrides)
  foreach(dir IN LISTS injection_rpath)
    string(APPEND lintian_overrides
      "cuaudit: custom-library-search-path RUNPATH ${dir} [usr/lib/cuaudit/libcuaudit-injection.so]\n")
  endforeach()
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/lintian-overrides ${lintian_overrides})
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lintian-overrides DESTINATION share/lintian/overrides RENAME cuaudit)
endif()
include(CPack)
