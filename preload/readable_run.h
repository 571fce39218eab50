/*
 * readable_run.h - whether memory is readable, asked of the kernel without
 * a descriptor and without a fault in the program.
 *
 * Two users: a thread's stack bounds (thread_stack.c), which came from
 * /proc/self/maps, opened on the program's lowest free descriptor for the
 * length of the read (a number the program's next open() expected, in a
 * table the program may be closing and refilling at that moment); and
 * libunwind's address checks (unwind_pipe.c), which wrote into a pipe of
 * its own.
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

#endif
