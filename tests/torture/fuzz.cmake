# fuzz_replay: arbitrary bytes as a log, through the reader into trace-replay's
# core with each model (TRACE_FUZZ=ON; built by add_fuzz_test, tests/fuzz.cmake).
set(FUZZ_SECONDS 40 CACHE STRING "How long the fuzz_replay ctest runs")
if(NOT TARGET replaycore)
  message(STATUS "tests/torture: fuzz_replay needs replaycore; skipped")
  return()
endif()
add_fuzz_test(NAME fuzz_replay TEST torture.fuzz_replay
              SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_replay.c LIBRARIES traceformat replaycore
              SECONDS ${FUZZ_SECONDS} CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus)
