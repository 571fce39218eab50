/*
 * python_lines.h - the line of an instruction, read from its code object's
 * own line table.
 *
 * PyCode_Addr2Line walks the table from its start at every call.  In an
 * import that is about 8,000 instructions a call: a module body's table is
 * long, and each of its instructions that allocates is a new look-up.  With
 * every GC allocation traced, those walks were a quarter of what the tracer
 * added to importing 15 stdlib modules (callgrind, 3.11.7).  Here the same
 * tables are read with a cursor kept per code object between look-ups: one
 * at or past the cursor's range goes on from there, an earlier one starts
 * again from the top.  The answers are PyCode_Addr2Line's, for every offset
 * of every code object tests/python/test_lines.py finds, on each
 * interpreter.
 *
 * Pure: no Python call, no allocation, and nothing read outside the table.
 */
#ifndef TRACE_PYTHON_LINES_H
#define TRACE_PYTHON_LINES_H

#include <stdint.h>

/* The table formats: 3.8 and 3.9's co_lnotab, 3.10's co_linetable (pairs
 * of bytes), 3.11's and later co_linetable (location entries). */
enum { PY_LINES_NONE, PY_LINES_LNOTAB, PY_LINES_310, PY_LINES_LOCATIONS };

/* Where a walk of one table stands: table bytes consumed, the byte offsets
 * [start, end) the last entry read covers (lnotab: start is the address
 * reached), its line (-1: none) and the running line. */
typedef struct py_line_cursor {
    uint32_t next;
    int32_t start, end, line, computed;
} py_line_cursor;

/* A cursor no look-up has used: the first starts from the top. */
#define PY_LINE_CURSOR_NEW ((py_line_cursor){ .start = INT32_MAX })

/* The line of byte offset `where` (>= 0) in the table `table[0..size)` of
 * a code object whose first line is `first`, as PyCode_Addr2Line gives it:
 * -1 where the table says none (or ends before `where`).  `cursor` must
 * have been used with this table only. */
int py_line_find(int format, const uint8_t *table, uint32_t size, int first, int where,
                 py_line_cursor *cursor);

#endif
