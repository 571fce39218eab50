/*
 * symbolize.h - native addresses to function, file and line, offline.
 *
 * A log records each module's path, load bias and build-id; this finds a
 * file with the same build-id (a binary or its separate debug file) and reads
 * its symbol table and DWARF line table through libdw.  Where to look, in
 * order:
 *   1. each user directory: DIR/.build-id/xx/rest.debug, DIR/.build-id/xx/rest,
 *      then DIR/<basename of the recorded path>;
 *   2. /usr/lib/debug/.build-id/xx/rest.debug;
 *   3. the recorded path itself.
 * A candidate whose build-id differs from the recorded one is never used (a
 * module recorded without a build-id accepts the first ELF file whose
 * PT_LOAD segments are the recorded ones: a file rebuilt at the path since
 * the run is another binary).
 * Stripped binaries get their DWARF from separate debug files found the same
 * way.  C++ names come demangled where the system has libstdc++.  Results are cached per module; missing, unreadable or odd files just
 * give no answer.
 */
#ifndef SYMBOLIZE_H
#define SYMBOLIZE_H

#include <stdint.h>

#include "trace_format.h"

typedef struct sym_ctx sym_ctx;

typedef struct sym_info {
    const char *function;   /* symbol name (C++ ones demangled), NULL when unknown */
    const char *inlined;    /* the innermost function inlined into it whose code
                             * ip is in (file and line are that code's), NULL
                             * when none or no DWARF says */
    const char *file;       /* source file, NULL when unknown */
    int line;               /* 0 when unknown */
    const char *binary;     /* the file the answer came from, NULL if none */
} sym_info;

/* debug_dirs: n directories searched first (may be NULL when n is 0). */
sym_ctx *sym_new(const char *const *debug_dirs, int n);
void sym_free(sym_ctx *s);

/* Look up ip (a runtime address inside module m).  Pass ip - 1 for return
 * addresses (every frame of a recorded stack) so the line is the call's.
 * Returns 1 when a function or a line was found, else 0.  Strings stay valid
 * until sym_free. */
int sym_lookup(sym_ctx *s, const tf_module *m, uint64_t ip, sym_info *out);
/* The function only, from the symbol table: no line table is read (that is
 * what costs, the first time a module's DWARF is met).  NULL when unknown. */
const char *sym_function(sym_ctx *s, const tf_module *m, uint64_t ip);

/* Why module m's frames go unresolved, when they do because the file found
 * is another build: the path of the first ELF file met where m was searched
 * for whose build-id (or, without one, PT_LOAD segments) differs from the
 * recorded one (the library was rebuilt or upgraded since the run, or the
 * log was brought to another machine).  NULL when m resolves or no such file
 * was met.  Searches for m's file if no frame of it was looked up yet. */
const char *sym_module_differs(sym_ctx *s, const tf_module *m);

#endif
