# THIRD_PARTY_NOTICES.txt: the licence notices of what the installed tool and injection carry inside
# them (static libraries and header-only code) or beside them (the .tar.gz's elfutils libraries) and
# of the shared libraries they link, made at configure time from Debian's copyright files
# of the packages built against, and installed beside the LICENSE. Boost's file covers all of Boost
# (2 MB): only its licence, the Boost Software License, is taken from it.
set(notices "cuaudit carries code of the following libraries, each under its own licence.\n")
string(APPEND notices "Each section is Debian's copyright file of the package it was built from.\n")
set(third_party
  "Boost (Stacktrace, Asio, Beast: header-only)|libboost1.74-dev|BSL-1.0"
  "{fmt}|libfmt-dev|"
  "nlohmann/json|nlohmann-json3-dev|"
  "CLI11|libcli11-dev|"
  "Capstone (static)|libcapstone-dev|"
  "elfutils libdw and libelf (shared libraries, LGPL-3+ or GPL-2+: lib/cuaudit/libdw.so.1 and libelf.so.1 in the .tar.gz may be replaced by any compatible build, or the tool relinked against one, whose source is at https://sourceware.org/elfutils/)|libdw-dev|"
  "zlib (shared, the system's)|zlib1g-dev|"
  "xz-utils liblzma (shared, the system's, through libdw)|liblzma-dev|"
  "bzip2 (shared, the system's, through libdw)|libbz2-dev|"
  "Expat (shared, the system's)|libexpat1-dev|"
  "Protocol Buffers' lite runtime (static)|libprotobuf-dev|"
  "GCC's libstdc++, libgcc and libbacktrace (static, GPL-3 with the GCC Runtime Library Exception)|libgcc-s1|")
foreach(entry IN LISTS third_party)
  string(REPLACE "|" ";" fields "${entry}")
  list(GET fields 0 name)
  list(GET fields 1 package)
  list(GET fields 2 only_licence)
  set(file /usr/share/doc/${package}/copyright)
  string(APPEND notices "\n==============================================================================\n${name}\n")
  string(APPEND notices "==============================================================================\n")
  if(NOT EXISTS ${file})
    string(APPEND notices "(Debian's ${file} was not on the build machine: see the library's own distribution.)\n")
    continue()
  endif()
  file(READ ${file} text)
  if(only_licence)
    string(FIND "${text}" "\nLicense: ${only_licence}\n Boost Software License" start)
    if(start GREATER -1)
      string(SUBSTRING "${text}" ${start} -1 rest)
      string(SUBSTRING "${rest}" 1 -1 rest)
      string(FIND "${rest}" "\n\n" stop)
      string(SUBSTRING "${rest}" 0 ${stop} text)
      set(text "${text}\n")
    endif()
  endif()
  string(APPEND notices "${text}")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/THIRD_PARTY_NOTICES.txt "${notices}")
install(FILES ${CMAKE_BINARY_DIR}/THIRD_PARTY_NOTICES.txt DESTINATION share/doc/cuaudit)
