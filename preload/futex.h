/*
 * futex.h - waiting on a word and waking its waiter, for the tracer's own
 * threads (the flusher and its helper): no lock a signal or a fork could
 * leave held, nothing from the thread library.
 */
#ifndef TRACE_FUTEX_H
#define TRACE_FUTEX_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleep while *word == value, at most timeout_ns (0: no limit); a wake, a
 * signal or a changed word ends it early, so callers look again. */
static inline void futex_wait(_Atomic int *word, int value, long timeout_ns)
{
    struct timespec ts = { timeout_ns / 1000000000L, timeout_ns % 1000000000L };
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, timeout_ns ? &ts : NULL, NULL, 0);
}

/* Wake one thread waiting on word. */
static inline void futex_wake(_Atomic int *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#endif
