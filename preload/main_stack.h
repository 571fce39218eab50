/*
 * main_stack.h - the main thread's stack, as pthread_getattr_np gives it,
 * without pthread_getattr_np.
 *
 * For the main thread glibc's pthread_getattr_np reads /proc/self/maps with
 * stdio and sscanf, line by line, asks sched_getaffinity for a CPU set we
 * do not want, and allocates: 130,000 instructions of the 650,000 a traced
 * /bin/true spent in libtrace.so at start, the largest part after opening
 * libunwind.  This reads the same file with read(2) into a buffer on the
 * stack and parses the two addresses of each line by hand, with glibc's
 * arithmetic (nptl/pthread_getattr_np.c): the same bounds, in a tenth of
 * the instructions and fewer system calls.
 */
#ifndef TRACE_MAIN_STACK_H
#define TRACE_MAIN_STACK_H

#include <stddef.h>
#include <stdint.h>

/* [*lo, *hi): the stack of the main thread; page: the page size (a power
 * of two).  0 on success, -1 when /proc/self/maps or the limit could not
 * be read or no mapping holds __libc_stack_end (*lo, *hi untouched). */
int main_stack_bounds(size_t page, uintptr_t *lo, uintptr_t *hi);

#endif
