/*
 * dl_hooks.h - the loader's real functions, for code that must not go
 * through our own dlopen/dlclose/dlsym.
 */
#ifndef TRACE_DL_HOOKS_H
#define TRACE_DL_HOOKS_H

/* glibc's dlsym.  Called from libtrace.so, so RTLD_NEXT means "after us". */
void *dl_real_dlsym(void *handle, const char *name);
void *dl_real_dlopen(const char *file, int mode);
int dl_real_dlclose(void *handle);

/* Counts dlopen and dlclose calls that went through us: a lookup that found
 * nothing need not be repeated until this changes. */
unsigned long dl_loader_changes(void);

/* Nonzero while the calling thread is inside dlopen (our interposed one):
 * code running there (an object's constructors) may be in an object that
 * has no MODULE_LOAD yet. */
int dl_in_dlopen(void);

/* Counts dlclose calls that went through us and succeeded: only these can
 * unmap code, so what was learnt about an address (a call site's real CUDA
 * function, cuda_symbols.c) holds until this changes. */
unsigned long dl_loader_unloads(void);

#endif
