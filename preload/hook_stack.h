/*
 * hook_stack.h - the recorder's work on a stack of our own when the
 * program's thread has too little left.
 *
 * An event's capture, encoding and (now and then) a seal, a flush or the
 * flusher's start took up to 12 KiB of the program's stack, where the
 * program itself needed 3: a thread made with a 16 KiB stack
 * (PTHREAD_STACK_MIN) died in its first traced malloc(2 MiB).  So before
 * that work the recorder asks whether HOOK_STACK_ROOM bytes are left below
 * the stack pointer, on a stack known to be the thread's; when not (a
 * small or almost used-up stack, a signal's alternate stack, a coroutine's,
 * one not known yet and too small to check), the work runs on one of a few
 * stacks of ours, mapped at start.  The question is one subtraction and one
 * compare against two per-thread words; only the first event of a thread,
 * one deeper than any before, or one that goes aside pays more.
 */
#ifndef TRACE_HOOK_STACK_H
#define TRACE_HOOK_STACK_H

#include <stdint.h>

/* What the recorder's deepest path needs, with room to spare: painted
 * (tests/cuda/prog_small_stack.c, tests/python/test_small_stack.py), a
 * hook took at most 9.4 KiB more than the bare call (an event that seals a
 * chunk, a collection of cycles); over three times as much is asked for. */
#define HOOK_STACK_ROOM (32u * 1024)

/* The lowest stack pointer known to leave HOOK_STACK_ROOM on this thread's
 * stack, and how far above it the stack goes: zero until the first event
 * that asks (hook_stack.c). */
extern __thread uintptr_t hook_room_from __attribute__((tls_model("initial-exec")));
extern __thread uintptr_t hook_room_span __attribute__((tls_model("initial-exec")));

/* Frames a call aside adds between the hook and the recorder (the
 * switch, its caller, the packed call): the stack walks cut off this many
 * more of our own frames while hook_stack_aside is set on the thread. */
#define HOOK_STACK_ASIDE_FRAMES 8
extern __thread int hook_stack_aside __attribute__((tls_model("initial-exec")));

/* At start: the main thread's stack, and our stacks. */
void hook_stack_init(void);

/* In a fork's child: its only thread holds none of our stacks, whatever
 * the parent's threads did. */
void hook_stack_fork_child(void);

/* Nonzero when the caller may do the recorder's work where it is. */
static inline __attribute__((always_inline)) int hook_stack_roomy(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return sp - hook_room_from < hook_room_span;
}

/* fn(arg) where it is safe: here if there is room after all (hook_room_*
 * updated), else on a stack of ours.  Without one (the mapping failed at
 * start), here. */
void hook_stack_run(void (*fn)(void *), void *arg);

#endif
