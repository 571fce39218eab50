/*
 * python_text.h - reading a str object's text without calling into Python.
 */
#ifndef TRACE_PYTHON_TEXT_H
#define TRACE_PYTHON_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "python_api.h"
#include "python_layout.h"

/* Copies at most cap bytes of s's text as UTF-8 into out (not terminated,
 * never cut inside a character) and returns the count; 0 for strings we
 * cannot read in place.  *truncated (when not NULL) says whether the text
 * went on past them.  A lone surrogate U+DC80..U+DCFF (a byte of a file name
 * that is not UTF-8, as surrogateescape decoded it) is written as that byte.
 * The caller holds the GIL, so s stays alive and unchanged. */
size_t py_text_utf8(const py_layout *l, const py_object *s, char *out, size_t cap, int *truncated);

#endif
