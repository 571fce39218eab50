/*
 * dl_object.h - which loaded object holds an address, without dladdr's
 * symbol search.
 *
 * dladdr searches the object's symbols for the nearest one: about 58,000
 * instructions a call in a Python process, which asked for the object of
 * PySys_AddAuditHook after every dlopen (ten extension modules for a
 * `python3.11 -c pass`).  glibc 2.35's _dl_find_object answers from the
 * loader's sorted table of mappings, without a lock or a symbol search.
 */
#ifndef TRACE_DL_OBJECT_H
#define TRACE_DL_OBJECT_H

#include <stdint.h>

/* The start of the mapping of the object that holds addr (dladdr's
 * dli_fbase), or 0 when none does. */
uintptr_t dl_object_start(const void *addr);

/* The file name of the object that holds addr (dladdr's dli_fname: the
 * program's own as dladdr gives it), or NULL when none does. */
const char *dl_object_file(const void *addr);

#endif
