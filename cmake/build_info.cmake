# Run at every build (cmake -P): writes build_info.h with the commit the tool is built from, and
# rewrites it only when that changed, so a new commit rebuilds one file and nothing else.
# Inputs: SOURCE_DIR, OUTPUT, CUDA_VERSION.
execute_process(COMMAND git -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR commit STREQUAL "")
  set(commit "unknown")  # a source tarball without git
endif()
if(CUDA_VERSION STREQUAL "")
  set(CUDA_VERSION "none")
endif()
set(text "#define CUAUDIT_GIT_COMMIT \"${commit}\"\n#define CUAUDIT_CUDA_VERSION \"${CUDA_VERSION}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUTPUT} "${text}")
endif()
