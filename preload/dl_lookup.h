/*
 * dl_lookup.h - a loaded object's symbols, read from its dynamic symbol
 * table, not asked of the loader.
 *
 * glibc keeps one dlerror state per thread, and every dlopen, dlsym,
 * dlclose and dlinfo empties or replaces it, ours included: a failure the
 * program got from its own dl call and has not read yet was gone after any
 * hook of ours that looked something up (a CUDA allocation, a large host
 * block), and dlerror() answered with our own miss ("undefined symbol:
 * PyObject_GetArenaAllocator") or with nothing.  glibc has no call that
 * puts a message back, so the lookups that run outside the program's own
 * dl calls go through here instead: dl_iterate_phdr and the objects' hash
 * tables, which leave the state alone and allocate nothing.
 *
 * What it finds is what dlsym finds for the default version of a name
 * (a hidden version is never the answer), with two limits: a definition of
 * type STT_GNU_IFUNC is not resolved (none of the names we look up is one:
 * NULL), and the global scope is taken as the load order, RTLD_LOCAL
 * objects included (dl_lookup_next).
 */
#ifndef TRACE_DL_LOOKUP_H
#define TRACE_DL_LOOKUP_H

/* name's definition in the loaded object `object` (a path as the loader
 * holds it, or a bare file name or soname), or NULL: what dlopen(object,
 * RTLD_NOLOAD) then dlsym of that handle answers, for a name the object
 * defines itself. */
void *dl_lookup_in_loaded(const char *object, const char *name);

/* Whether an object the loader would take for `object` is loaded: by its
 * path, or a bare name by its soname or its file's name (glibc also knows
 * an object by each name a dlopen found it under; where such a name is
 * also its file's, as it usually is, this says the same). */
int dl_lookup_loaded(const char *object);

/* name's definition in the loaded object that holds addr, or NULL. */
void *dl_lookup_in_object_at(const void *addr, const char *name);

/* name's definition in handle's object and then its dependencies, breadth
 * first (dlsym(handle, name)); handle is what dlopen returned. */
void *dl_lookup_in_scope(const void *handle, const char *name);

/* name's first definition in the objects loaded after libtrace.so, in load
 * order (dlsym(RTLD_NEXT, name) from libtrace.so, RTLD_LOCAL objects
 * included), or NULL. */
void *dl_lookup_next(const char *name);

/* name's first definition in any loaded object but libtrace.so, in load
 * order. */
void *dl_lookup_any(const char *name);

#endif
