/*
 * got_slot.h - the GOT slot through which a loaded object calls a function
 * it imports.
 *
 * Tools that intercept a library's calls without preloading (memray, some
 * profilers) rewrite these slots at run time; a caller of ours that goes
 * past such a slot on a shortcut reads it to know whether the call would
 * have gone somewhere else (python_alloc.c).
 *
 * Failure policy: best effort.  NULL when the object has no slot for the
 * name, or its dynamic section cannot be read; the caller then has nothing
 * to look at and keeps its shortcut.
 */
#ifndef TRACE_GOT_SLOT_H
#define TRACE_GOT_SLOT_H

/* slots[k]: the slot for names[k] in the loaded object that holds `addr`
 * (the program included): its JUMP_SLOT (calls through the PLT) when it
 * has one, else its GLOB_DAT (calls through the GOT, -fno-plt); NULL where
 * it has neither.  One pass over the object's relocations for all n names.
 * Takes the loader's lock (dl_iterate_phdr): not for signal handlers. */
void got_slot_find(const void *addr, const char *const *names, void *const **slots, int n);

#endif
