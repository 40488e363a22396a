# The analysis's memory follows what is live, not how many events there were: two synthetic traces
# with the same live set (20,000 allocations from 1,000 stacks) and ten times as many events apart
# are reported, and the larger one's peak memory must stay within 1.5x of the smaller one's. A
# ratio, never a time: CI machines are small and shared.
file(REMOVE_RECURSE ${WORK_DIR})
foreach(size small large)
  if(size STREQUAL "small")
    set(events 200000)
  else()
    set(events 2000000)
  endif()
  file(MAKE_DIRECTORY ${WORK_DIR}/${size})
  execute_process(COMMAND ${MAKE_TRACE} ${WORK_DIR}/${size} ${events} 20000 1000 8 RESULT_VARIABLE made
                  OUTPUT_QUIET)
  if(NOT made EQUAL 0)
    message(FATAL_ERROR "make_trace failed: ${made}")
  endif()
  execute_process(COMMAND ${PEAK_RSS} ${CUAUDIT} report ${WORK_DIR}/${size} --log-file ${WORK_DIR}/${size}.txt
                  RESULT_VARIABLE reported ERROR_VARIABLE measured)
  if(NOT reported EQUAL 0)
    message(FATAL_ERROR "cuaudit report failed: ${reported}: ${measured}")
  endif()
  string(REGEX MATCH "peak_rss: [0-9.]+ s ([0-9]+) KiB" matched "${measured}")
  if(NOT matched)
    message(FATAL_ERROR "peak_rss printed nothing: ${measured}")
  endif()
  set(kib_${size} ${CMAKE_MATCH_1})
endforeach()
math(EXPR limit "${kib_small} * 3 / 2")
message(STATUS "peak memory: ${kib_small} KiB for 200,000 events, ${kib_large} KiB for 2,000,000 (limit ${limit})")
if(kib_large GREATER limit)
  message(FATAL_ERROR "reporting 10x the events with the same live set took ${kib_large} KiB, more than 1.5x "
                      "the ${kib_small} KiB of the smaller trace: the analysis keeps per-event history")
endif()
