/*
 * fork_gate.h - no thread of the tracer inside the loader or libunwind when
 * the process forks.
 *
 * fork() copies every lock as it is at that moment, and the child has only
 * the forking thread.  A thread of ours walking a stack (libunwind calls
 * dl_iterate_phdr, which holds the loader's lock, and takes locks of its
 * own) or listing the modules when another thread forks leaves those locks
 * held in the child for good: the child's first stack walk, or its module
 * rescan in the fork handler, then waits forever.  glibc resets its malloc
 * and stdio locks in the child, not the loader's.  Such walks go through
 * this gate; the fork handlers close it and wait for the walkers inside.
 */
#ifndef TRACE_FORK_GATE_H
#define TRACE_FORK_GATE_H

/* Around a call into the loader or libunwind, or while a descriptor of
 * ours is open for a moment (native_stack.c: no child inherits it); any
 * thread, also in a signal handler.  enter waits while another thread
 * prepares a fork. */
void fork_gate_enter(void);
void fork_gate_leave(void);

/* pthread_atfork prepare: close the gate, then wait (bounded) until no
 * other thread is inside.  parent: open it again.  child: open, and forget
 * the threads that did not come along. */
void fork_gate_close(void);
void fork_gate_open(void);
void fork_gate_child(void);

#endif
