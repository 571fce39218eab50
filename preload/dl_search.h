/*
 * dl_search.h - find a library the way glibc would for the code that
 * called dlopen, not for libtrace.so.
 *
 * glibc searches a bare name ("libfoo.so.1") in the calling object's
 * DT_RPATH/DT_RUNPATH, and it learns who called from the return address.
 * Our dlopen is the caller as far as glibc can tell, so a program whose
 * RUNPATH finds its plugins would stop finding them under the preload.
 */
#ifndef TRACE_DL_SEARCH_H
#define TRACE_DL_SEARCH_H

#include <stddef.h>

/* The path to pass to the real dlopen for `file` called from `caller`:
 * file itself when it has a slash, is already loaded, or is not in the
 * caller's own search path (glibc then searches as usual); else the full
 * path found there, in memory mapped for the search (*scratch, NULL when
 * none was): give it back with dl_search_done after the dlopen.  Mapped,
 * not on the stack: the search's three paths took 12 KiB of the program's
 * stack, and the found one stayed there while the loaded objects'
 * constructors ran. */
const char *dl_search_for_caller(const char *file, const void *caller, void **scratch);
void dl_search_done(void *scratch);

#endif
