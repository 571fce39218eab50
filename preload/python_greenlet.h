/*
 * python_greenlet.h - whether greenlet is in the middle of a stack switch
 * on the GIL holder's thread, when the thread state's C frame points at
 * memory the switch is rewriting.
 *
 * greenlet moves a greenlet's C stack by copying it to the heap and back.
 * Between the copy back of the target's stack and the moment it puts the
 * target's Python state into the thread state, tstate->cframe (3.11/3.12,
 * a pointer into the C stack) still names the C frame of the greenlet
 * switched away from, at an address the copy has just overwritten with the
 * target's bytes (or left to whatever an earlier call wrote there), and in
 * that interval greenlet frees the heap copy (PyMem_Free): our host_free
 * event's Python stack walk read a frame pointer out of that memory and
 * faulted.  greenlet marks the interval itself: its switching_thread_state
 * is set just before the switch and cleared after the Python state is put
 * back.  PyPI's builds keep it a file-scope variable with its symbol in
 * the module's .symtab (not the dynamic one), read from the file when the
 * module is loaded.
 *
 * Failure policy: a greenlet module whose file cannot be read, that has no
 * .symtab (stripped, as distributions ship it) or keeps the variable
 * thread-local (free-threaded builds) is not watched: its switches are
 * walked as before.  Nothing here allocates; the file is read with open,
 * mmap and close, during a dlopen on the program's own thread (a
 * descriptor of ours in the program's table for that long).  CPython never
 * unloads an extension module; an embedder's dlclose that unloaded greenlet
 * would leave its slot pointing at unmapped memory (not handled).
 */
#ifndef TRACE_PYTHON_GREENLET_H
#define TRACE_PYTHON_GREENLET_H

#include <stdatomic.h>

/* The most greenlet modules watched at once (one per interpreter in
 * practice). */
#define GREENLET_MAX 4

/* Where each watched module keeps switching_thread_state; NULL slots are
 * free.  The first NULL ends the list. */
extern void *_Atomic greenlet_switching_at[GREENLET_MAX];

/* After each dlopen: new greenlet modules among the loaded objects are
 * watched. */
void python_greenlet_on_dlopen(void);

/* Nonzero while a watched greenlet module is inside a switch: the thread
 * state's frames are not to be read.  The variable is the process's, not
 * the thread's: another thread's event in those microseconds (one without
 * the GIL, which the switching thread holds) goes without its Python
 * stack too. */
static inline __attribute__((always_inline)) int python_greenlet_switching(void)
{
    for (int i = 0; i < GREENLET_MAX; i++) {
        void *at = atomic_load_explicit(&greenlet_switching_at[i], memory_order_relaxed);
        if (!at)
            return 0;
        if (*(void *const volatile *)at)
            return 1;
    }
    return 0;
}

#endif
