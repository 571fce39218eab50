/*
 * readable_run.h - whether memory is readable, asked of the kernel without
 * a descriptor and without a fault in the program.
 *
 * Users: a thread's stack bounds (thread_stack.c), which came from
 * /proc/self/maps, opened on the program's lowest free descriptor for the
 * length of the read (a number the program's next open() expected, in a
 * table the program may be closing and refilling at that moment);
 * libunwind's address checks (unwind_pipe.c), which wrote into a pipe of
 * its own; and the Python stack walk while a greenlet switch may have left
 * the thread state naming rewritten memory (python_greenlet.h), which
 * copies what it follows through readable_gather.
 *
 * The kernel is asked with process_vm_readv(2) of our own process: one
 * byte of each page, many pages per call, and the call stops at the first
 * one it cannot read (unmapped, PROT_NONE like a stack's guard, a file
 * mapping past its end).  Where a seccomp policy refuses that call (some
 * allow it only with CAP_SYS_PTRACE), rt_sigprocmask(2) with a `how` that
 * does not exist is asked about one address at a time: it copies the new
 * mask in first, failing with EFAULT where that cannot be read, and then
 * refuses the `how` without touching the mask.
 *
 * No descriptor, no lock, no allocation: callable in a signal handler,
 * with under 1 KiB of stack.  errno is left as it was.
 *
 * readable_gather copies with process_vm_readv itself: a page unmapped by
 * another thread at that moment is a short count, never a fault.  Where
 * that call is refused it asks rt_sigprocmask about each piece's first and
 * last page and then copies with memcpy: a page another thread unmaps
 * between the two would fault (the copy is then as safe as the check of
 * the page, not more).
 */
#ifndef TRACE_READABLE_RUN_H
#define TRACE_READABLE_RUN_H

#include <stddef.h>
#include <stdint.h>

/* Can n bytes (at most 8) at addr be read?  1 or 0. */
int readable_bytes(const void *addr, size_t n);

/* The run of readable pages that ends at `top` (the page holding top - 1
 * first), walked down to the page holding `want` and no further.  page:
 * the page size (a power of two).
 *   1  every page down to want's is readable: *lo = want's page (top's
 *      page when want is at or above it).
 *   0  the run ends before it: *lo = the lowest readable page's start
 *      (top's page rounded up when not even that one is readable). */
int readable_run_down(uintptr_t top, uintptr_t want, size_t page, uintptr_t *lo);

/* One piece of a gather: len bytes (at most READABLE_PIECE_MAX) from src
 * to dst. */
#define READABLE_PIECE_MAX 4096
typedef struct readable_piece {
    void *dst;
    const void *src;
    size_t len;
} readable_piece;

/* Copies the n pieces (at most 16) in order, each whole or not at all where
 * its memory cannot all be read, and stops at the first that cannot:
 * returns how many were copied whole, from the first (a piece after the
 * first failure may have been written in part). */
int readable_gather(const readable_piece *pieces, int n);

#endif
