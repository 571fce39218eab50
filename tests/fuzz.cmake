# add_fuzz_test(NAME TEST SOURCE FILE LIBRARIES targets... SECONDS N CORPUS DIR)
#
# One way to build and run a libFuzzer target.  libFuzzer needs clang while
# the project may build with gcc, so the fuzzer is compiled by a custom
# command: clang over the fuzz driver and every source of the named library
# targets, with the fuzzer's coverage, ASan and UBSan.  The test runs it for
# SECONDS from the checked-in corpus with a fixed seed (a CI run must give the
# same verdict twice; long exploratory runs use random seeds, by hand); new
# inputs go to a scratch folder so the corpus in the repository stays as it is.
find_program(TRACE_CLANG NAMES clang-14 clang)

# Every source of a library target, as absolute paths.
function(fuzz_target_sources target out)
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(paths)
  foreach(source ${sources})
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${dir})
    list(APPEND paths ${path})
  endforeach()
  set(${out} ${paths} PARENT_SCOPE)
endfunction()

function(add_fuzz_test)
  cmake_parse_arguments(F "" "NAME;TEST;SOURCE;SECONDS;CORPUS" "LIBRARIES" ${ARGN})
  if(NOT TRACE_CLANG)
    message(STATUS "${F_TEST}: needs clang with libFuzzer; skipped")
    return()
  endif()
  set(sources ${F_SOURCE})
  set(includes)
  # Headers too, so that editing one rebuilds the fuzzer (the custom
  # command knows no dependencies but these).
  get_filename_component(source_dir ${F_SOURCE} DIRECTORY)
  file(GLOB headers ${source_dir}/*.h)
  foreach(lib ${F_LIBRARIES})
    fuzz_target_sources(${lib} lib_sources)
    get_target_property(lib_dir ${lib} SOURCE_DIR)
    list(APPEND sources ${lib_sources})
    list(APPEND includes -I${lib_dir})
    file(GLOB lib_headers ${lib_dir}/*.h)
    list(APPEND headers ${lib_headers})
  endforeach()
  set(bin ${CMAKE_CURRENT_BINARY_DIR}/${F_NAME})
  add_custom_command(
    OUTPUT ${bin}
    COMMAND ${TRACE_CLANG} -std=gnu11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
            -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            ${includes} ${sources} ${ZSTD_LDFLAGS} -lm -o ${bin}
    DEPENDS ${sources} ${headers}
    COMMENT "Building ${F_NAME} with clang (libFuzzer, ASan, UBSan)"
    VERBATIM)
  add_custom_target(${F_NAME} ALL DEPENDS ${bin})
  add_test(NAME ${F_TEST}
           COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                   sh -c "rm -rf corpus-${F_NAME} && mkdir corpus-${F_NAME} && exec \"$0\" -seed=1 -max_total_time=$1 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=./ corpus-${F_NAME} \"$2\""
                   ${bin} ${F_SECONDS} ${F_CORPUS}
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(${F_TEST} PROPERTIES TIMEOUT 300)
endfunction()
