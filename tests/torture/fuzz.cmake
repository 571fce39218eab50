# fuzz_replay: a libFuzzer target over trace-replay's core (TRACE_FUZZ=ON).
# libFuzzer needs clang while the project may build with gcc, so the target
# is compiled by a custom command: clang over the sources of the traceformat
# and replaycore libraries, with fuzzer, ASan and UBSan.
# The ctest runs it for FUZZ_SECONDS from the checked-in corpus.
find_program(TRACE_CLANG NAMES clang-14 clang)
if(NOT TRACE_CLANG OR NOT TARGET replaycore)
  message(STATUS "tests/torture: fuzz_replay needs clang and replaycore; skipped")
  return()
endif()
set(FUZZ_SECONDS 40 CACHE STRING "How long the fuzz_replay ctest runs")

# Every source of a library target, as absolute paths.
function(target_source_paths target out)
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(paths)
  foreach(source ${sources})
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${dir})
    list(APPEND paths ${path})
  endforeach()
  set(${out} ${paths} PARENT_SCOPE)
endfunction()
target_source_paths(traceformat FORMAT_SOURCES)
target_source_paths(replaycore REPLAY_SOURCES)
set(FUZZ_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_replay.c ${FORMAT_SOURCES} ${REPLAY_SOURCES})
get_target_property(FORMAT_DIR traceformat SOURCE_DIR)
get_target_property(REPLAY_DIR replaycore SOURCE_DIR)

set(FUZZ_BIN ${CMAKE_CURRENT_BINARY_DIR}/fuzz_replay)
add_custom_command(
  OUTPUT ${FUZZ_BIN}
  COMMAND ${TRACE_CLANG} -std=gnu11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
          -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
          -I${FORMAT_DIR} -I${REPLAY_DIR} ${FUZZ_SOURCES}
          ${ZSTD_LDFLAGS} -lm -o ${FUZZ_BIN}
  DEPENDS ${FUZZ_SOURCES}
  COMMENT "Building fuzz_replay with clang (libFuzzer, ASan, UBSan)"
  VERBATIM)
add_custom_target(fuzz_replay ALL DEPENDS ${FUZZ_BIN})

# New inputs go to a scratch copy; the checked-in corpus stays as it is.
add_test(NAME torture.fuzz_replay
         COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                 sh -c "rm -rf corpus && mkdir corpus && exec \"$0\" -max_total_time=$1 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 corpus \"$2\""
                 ${FUZZ_BIN} ${FUZZ_SECONDS} ${CMAKE_CURRENT_SOURCE_DIR}/corpus
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(torture.fuzz_replay PROPERTIES TIMEOUT 300)
