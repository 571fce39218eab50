/*
 * modules.h - which ELF objects are loaded where, so native stacks resolve
 * later, on another machine (path, load bias, build-id, PT_LOAD segments).
 */
#ifndef TRACE_MODULES_H
#define TRACE_MODULES_H

/* Record objects not recorded yet (every one at start), and MODULE_UNLOAD
 * for those that went away: at start and after each dlopen/dlclose. */
void modules_rescan(void);

/* modules_rescan when the loader's adds+subs differ from the last snapshot
 * applied (one dl_iterate_phdr callback to ask): after dlopen and dlclose,
 * and for an event recorded inside dlopen, whose stack may run through the
 * constructor of an object not yet recorded. */
void modules_rescan_if_changed(void);

/* The loader's adds+subs (dlpi_adds + dlpi_subs): it changes whenever an
 * object is loaded or unloaded; 0 where the C library does not say. */
unsigned long long modules_loader_generation(void);

/* The program's file (/proc/self/exe), read once: the executable's module
 * and the log header's exe (start.c), which each read it before. */
const char *modules_exe_path(void);

/* In a forked child: the parent's table, restated in the child's new log
 * (no loader call: see modules.c). */
void modules_fork_child(void);

#endif
