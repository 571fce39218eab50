# scripts/lib/install.cmake - what `cmake --install` puts under a prefix:
#
#   bin/      trace-run, trace-replay, trace-dump, trace-bundle, torch-snapshot-import
#   lib/      libtrace.so, libgputrace-unwind.so.8 (its libunwind), pkgconfig/gputrace.pc
#   include/  trace_api.h (the pool annotation API: header only)
#   share/man/man1/  a page per program, made from its --help
#
# pip's wheel (pyproject.toml) is the same rules with the gputrace package's
# folder as the prefix.  Nothing installed names the prefix: trace-run finds
# the library from its own place and pkg-config from the .pc file's, so a
# prefix can be moved or copied elsewhere.  Tests and benchmarks are never
# installed.
include(GNUInstallDirs)

install(TARGETS trace LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TRACE_UNWIND_PRIVATE)
  # libtrace.so's own libunwind, opened beside it (preload/unwind_lib.c).
  install(FILES ${TRACE_UNWIND_PRIVATE_FILE} DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(TARGETS trace-replay trace-dump RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/preload/trace_api.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/trace-bundle ${PROJECT_SOURCE_DIR}/scripts/torch-snapshot-import
        DESTINATION ${CMAKE_INSTALL_BINDIR})

# Where one installed directory is, seen from another: relative when both
# are (the default), so the prefix can move; absolute otherwise.
function(trace_install_relpath from to out)
  if(IS_ABSOLUTE "${to}")
    set(${out} "${to}" PARENT_SCOPE)
  elseif(IS_ABSOLUTE "${from}")
    set(${out} "${CMAKE_INSTALL_PREFIX}/${to}" PARENT_SCOPE)
  else()
    file(RELATIVE_PATH rel "/prefix/${from}" "/prefix/${to}")
    string(REGEX REPLACE "/$" "" rel "${rel}")
    if(rel STREQUAL "")
      set(rel ".")
    endif()
    set(${out} "${rel}" PARENT_SCOPE)
  endif()
endfunction()

set(TRACE_STAGE ${CMAKE_BINARY_DIR}/install-stage)

# trace-run, with the library's place relative to bindir written in.
trace_install_relpath(${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_LIBDIR}/libtrace.so TRACE_LIB_FROM_BIN)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/scripts/trace-run)
file(READ ${PROJECT_SOURCE_DIR}/scripts/trace-run trace_run_text)
string(REPLACE "\nINSTALLED_LIB = None\n" "\nINSTALLED_LIB = \"${TRACE_LIB_FROM_BIN}\"\n"
       trace_run_installed "${trace_run_text}")
if(trace_run_installed STREQUAL trace_run_text)
  message(FATAL_ERROR "scripts/trace-run has no line 'INSTALLED_LIB = None' for the install to fill in")
endif()
file(WRITE ${TRACE_STAGE}/trace-run "${trace_run_installed}")
install(PROGRAMS ${TRACE_STAGE}/trace-run DESTINATION ${CMAKE_INSTALL_BINDIR})

# pkg-config: `pkg-config --cflags gputrace` for trace_api.h,
# `pkg-config --variable=libtrace gputrace` for what to preload.
trace_install_relpath(${CMAKE_INSTALL_LIBDIR}/pkgconfig . TRACE_PREFIX_FROM_PC)
if(IS_ABSOLUTE "${TRACE_PREFIX_FROM_PC}")
  set(TRACE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  set(TRACE_PC_PREFIX "\${pcfiledir}/${TRACE_PREFIX_FROM_PC}")
endif()
set(TRACE_PC_LIBS "")
if(CMAKE_DL_LIBS)
  set(TRACE_PC_LIBS "-l${CMAKE_DL_LIBS}")   # trace_api.h calls dlsym (glibc < 2.34 needs -ldl)
endif()
configure_file(${PROJECT_SOURCE_DIR}/scripts/lib/gputrace.pc.in ${TRACE_STAGE}/gputrace.pc @ONLY)
install(FILES ${TRACE_STAGE}/gputrace.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Man pages, made at build time from each program's own --help, so they say
# what the installed program says.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "man pages skipped: no Python 3 to make them")
  return()
endif()
set(help2man ${PROJECT_SOURCE_DIR}/scripts/lib/help2man.py)
set(TRACE_MAN_PAGES)
# trace_man_page(NAME SUMMARY DEPENDS... COMMANDS cmd... [COMMANDS cmd...])
function(trace_man_page name summary)
  cmake_parse_arguments(M "" "" "DEPENDS" ${ARGN})
  set(page ${TRACE_STAGE}/man/${name}.1)
  add_custom_command(
    OUTPUT ${page}
    COMMAND ${Python3_EXECUTABLE} ${help2man} --name ${name} --summary ${summary}
            --version ${PROJECT_VERSION} --out ${page} ${M_UNPARSED_ARGUMENTS}
    DEPENDS ${help2man} ${M_DEPENDS}
    COMMENT "Man page ${name}.1 from --help"
    VERBATIM)
  set(TRACE_MAN_PAGES ${TRACE_MAN_PAGES} ${page} PARENT_SCOPE)
endfunction()
set(run_script ${PROJECT_SOURCE_DIR}/scripts)
trace_man_page(trace-run "run a command under the GPU and Python memory flight recorder"
  --help-of ${Python3_EXECUTABLE} ${run_script}/trace-run --help
  DEPENDS ${run_script}/trace-run)
trace_man_page(trace-replay "replay a gputrace log through pool models, check, explore, minimize, report"
  --help-of $<TARGET_FILE:trace-replay> --help
  --help-of $<TARGET_FILE:trace-replay> report --help
  --help-of $<TARGET_FILE:trace-replay> export --help
  --help-of $<TARGET_FILE:trace-replay> import --help
  DEPENDS trace-replay)
trace_man_page(trace-dump "print a gputrace log's events as text or JSON lines"
  --help-of $<TARGET_FILE:trace-dump> --help
  DEPENDS trace-dump)
trace_man_page(trace-bundle "one archive for a bug report: a gputrace log and the symbols it needs"
  --help-of ${Python3_EXECUTABLE} ${run_script}/trace-bundle --help
  DEPENDS ${run_script}/trace-bundle)
trace_man_page(torch-snapshot-import "a PyTorch memory snapshot as a gputrace log"
  --help-of ${Python3_EXECUTABLE} ${run_script}/torch-snapshot-import --help
  DEPENDS ${run_script}/torch-snapshot-import)
add_custom_target(man-pages ALL DEPENDS ${TRACE_MAN_PAGES})
install(FILES ${TRACE_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
