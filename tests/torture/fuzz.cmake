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

# fuzz_import: arbitrary bytes as JSON lines through trace-replay import; what
# it accepts must read back whole.
set(FUZZ_IMPORT_SECONDS 30 CACHE STRING "How long the fuzz_import ctest runs")
add_fuzz_test(NAME fuzz_import TEST torture.fuzz_import
              SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_import.c LIBRARIES traceformat replaycore replayimport
              SECONDS ${FUZZ_IMPORT_SECONDS} CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus_import)
