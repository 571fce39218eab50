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
 * is set before the switch and cleared just before the Python state is put
 * back (nothing between the two calls us).  PyPI's builds keep it a
 * file-scope variable with its symbol in the module's .symtab (not the
 * dynamic one), read from the file when the module is loaded.
 *
 * A greenlet module whose file cannot be read, that has no .symtab
 * (stripped, as distributions ship it: Debian 12's python3-greenlet) or
 * keeps the variable thread-local (free-threaded builds) cannot be watched:
 * the process is then "greenlet unwatched" for good, and the Python stack
 * of every large host block release (on any thread) is read with checked
 * copies instead (python_stack.c, walk_checked): each pointer followed is
 * copied by process_vm_readv (readable_run.h), each frame's code must be a
 * live code object, the walk is bounded, and it stops at the first failure
 * with the frames it has.  What tstate->cframe names in the interval is
 * whatever the copy put there: often the C frame of the greenlet switched
 * to, whose frames are real: such an event may carry another greenlet's
 * frames (or a part of them), never a fault and never an endless walk.
 *
 * Only large host block releases need it.  In the interval (the copy
 * back's memcpy in copy_heap_to_stack to `tstate->cframe = this->cframe`
 * in PythonState::operator>>) the one call that can reach us is the
 * PyMem_Free of the heap copy: a py_free event (no stack) and, for a copy
 * at or over TRACE_HOST_THRESHOLD, libc's free, a host block release.  The
 * events that walk otherwise come from outside it: allocations (the
 * PyMem_Realloc of the copy in copy_stack_to_heap_up_to, a host block
 * release and allocation; frame objects of expose_frames) happen before
 * the copy back, on the C stack of the greenlet still running, whose C
 * frame is sound; no Python code, no collection, no CUDA or pool call runs
 * in the interval; another thread walks its own thread state, whose C
 * frame is on its own stack.  So they keep the fast walk, and a process
 * without an unwatched greenlet pays one predictable branch per host block
 * release.
 *
 * Failure policy: nothing here allocates; the file is read with open,
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

/* Set once a greenlet module was loaded that cannot be watched (above);
 * never cleared. */
extern _Atomic int greenlet_unwatched;

static inline __attribute__((always_inline)) int python_greenlet_unwatched(void)
{
    return atomic_load_explicit(&greenlet_unwatched, memory_order_relaxed);
}

/* After each dlopen: new greenlet modules among the loaded objects are
 * watched, or the process marked greenlet unwatched. */
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
