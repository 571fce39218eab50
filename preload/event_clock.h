/*
 * event_clock.h - events' times: CLOCK_MONOTONIC, read for less.
 *
 * Every event carries a time, and reading CLOCK_MONOTONIC is a vDSO call
 * that costs 20 ns or more in a virtual machine (the time stamp counter
 * read, fenced, inside a seqlock): the largest single cost of a traced
 * allocation when every Python allocation is recorded.  Where the kernel
 * itself keeps CLOCK_MONOTONIC on the time stamp counter (its clocksource
 * is "tsc": the counter is invariant and synchronised across CPUs, or the
 * kernel would not have chosen it), an event's time is the counter read
 * directly, scaled by the rate measured against CLOCK_MONOTONIC, from an
 * anchor that CLOCK_MONOTONIC renews at least every millisecond.  Elsewhere
 * (another clocksource, another architecture, TRACE_CLOCK=precise, or an
 * extrapolation that ever strays from the clock by more than 50 us) every
 * read is CLOCK_MONOTONIC's own.
 *
 * Times never go back from one read to the next, so times are non-decreasing
 * in seq order.  One caller at a time: the recorder reads it under its lock.
 */
#ifndef TRACE_EVENT_CLOCK_H
#define TRACE_EVENT_CLOCK_H

#include <stdint.h>

/* Decides whether the counter may be used: allowed (TRACE_CLOCK is not
 * "precise") and the kernel's clocksource is "tsc" (read once).  Call
 * before the first event_clock_ns; again in a fork child is harmless. */
void event_clock_init(int allowed);

/* CLOCK_MONOTONIC now, in ns (not rounded to the log's unit). */
uint64_t event_clock_ns(void);

/* The counter now, for event_clock_ns_from; 0 where reads are the kernel's
 * clock's.  Needs no lock: read as a hook starts, before its stack capture,
 * the counter's read (about 12 ns in a virtual machine, and the one
 * instruction a traced allocation stalled on most) overlaps with that
 * work instead of stalling the recorder under its lock. */
uint64_t event_clock_early(void);

/* As event_clock_ns, for an event whose counter was read earlier on this
 * thread (event_clock_early): the time at that read, but never before the
 * time any read returned (times never go back, so an event that waited for
 * the lock behind a later one gets that one's time).  When the anchor is
 * due for renewal, or was renewed after the early read, the counter is
 * read again for the renewal's pair and that time is returned. */
uint64_t event_clock_ns_from(uint64_t early);

/* CLOCK_MONOTONIC now, in ns, read from the kernel whatever the mode; no
 * later event_clock_ns is below it.  For a log header's start (no event is
 * being timed meanwhile: start-up, a fork child). */
uint64_t event_clock_start_ns(void);

/* The time the latest read returned (by any thread), in ns; 0 before the
 * first.  Needs no lock and reads no clock: it may lag the present by as
 * much as the process went without an event.  For deciding whether
 * something is due ("has 100 ms passed?") once per event, where asking the
 * kernel's clock each time cost more than the rest of the decision. */
uint64_t event_clock_latest_ns(void);

/* 1 when reads go through the counter (for the settings the log records). */
int event_clock_uses_counter(void);

#endif
