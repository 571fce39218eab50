/*
 * python_text.h - reading a str object's text without calling into Python.
 */
#ifndef TRACE_PYTHON_TEXT_H
#define TRACE_PYTHON_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "python_api.h"
#include "python_layout.h"

/* Copies at most cap bytes of s's text as UTF-8 into out (not terminated) and
 * returns the count; 0 for strings we cannot read in place.  The caller holds
 * the GIL, so s stays alive and unchanged. */
size_t py_text_utf8(const py_layout *l, const py_object *s, char *out, size_t cap);

#endif
