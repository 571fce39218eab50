/*
 * event_clock.c - events' times from the time stamp counter, where the
 * kernel's own clock is that counter (event_clock.h says why).
 *
 * The scale.  CLOCK_MONOTONIC runs at the counter's rate as the kernel
 * measured it (slewed by NTP by at most 500 parts per million).  We measure
 * the same rate: the counter and the clock read together at the first
 * event, and again at each renewal; once 10 ms lie between the first
 * reading and the latest, ns per tick is their ratio (32.32 fixed point).
 * Until then every read is the clock's own.
 *
 * The anchor.  A time is anchor_ns + (counter - anchor_ticks) * scale, and
 * the anchor is renewed from CLOCK_MONOTONIC whenever a read finds it more
 * than a millisecond old (or finds the counter behind it: a migrated virtual
 * machine): an error in the scale of one part in a thousand, far more than
 * either clock drifts, moves a time by at most a microsecond, the log's
 * default unit.  At each renewal the extrapolated time is compared with the
 * clock: should they ever differ by more than 50 us, the counter is not
 * what the kernel keeps its clock on after all, and every later read is
 * the clock's own.
 *
 * A reading is a pair: the counter, the clock, the counter again, and the
 * clock's time is put at the midpoint of the two counter values.  A pair
 * whose thread was preempted between its reads (a loaded machine: the first
 * CI failure of this module) may be off by half its width, milliseconds, so
 * a rate is taken only from two pairs whose widths together are below 100
 * parts per million of the baseline between them: a first pair too wide for
 * that is replaced by a narrower one; and once calibrated, a pair wider than
 * 2 us renews nothing (the clock's own time is used for that event).
 *
 * Not re-entrant and not locked: the recorder calls it under its lock (a
 * signal handler that interrupts the lock's holder drops its event before
 * it gets here), and a fork child starts with the parent's state, which is
 * as valid in the child (the same counter, the same clock).
 */
#include "event_clock.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RENEW_NS 1000000ull          /* renew the anchor at least this often */
#define CALIBRATE_NS 10000000ull     /* measure the rate over at least this */
#define STRAY_NS 50000ll             /* the counter and the clock disagree: stop using it */
#define DOUBT_PER 10000u             /* a rate's pairs may be off by 1/10000 of its baseline */

/* 1: the counter may be read.  Atomic: event_clock_early reads it without
 * the lock (relaxed, a plain load), renew may clear it under the lock. */
static _Atomic int use_counter;
static int calibrated;               /* 1: scale holds the rate */
static uint64_t scale;               /* ns per tick, 32.32 fixed point */
static uint64_t renew_ticks;         /* RENEW_NS in ticks */
/* A read this many ticks or more after the anchor renews it: renew_ticks
 * + 1 while calibrated, else 0 (every read).  The reads' one test for
 * both (!calibrated || since > renew_ticks took a load, a test and a
 * branch more, 3 instructions of every py_alloc). */
static uint64_t renew_from;
static uint64_t base_ticks, base_ns; /* the rate's first measurement */
static uint64_t base_width;          /* its pair's width, ticks */
static uint64_t anchor_ticks, anchor_ns;
/* Times never go back.  Written under the recorder's lock; read without it
 * by event_clock_latest_ns (relaxed: plain moves on x86-64). */
static _Atomic uint64_t last_ns;

#ifndef EVENT_CLOCK_FAKE_SOURCES   /* a unit test brings its own counter and clock */
static uint64_t precise_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static inline uint64_t read_counter(void)
{
    return __builtin_ia32_rdtsc();
}

/* The kernel's clocksource is the time stamp counter.  Read once at start,
 * from the constructor: the descriptor lives for two calls. */
static int kernel_clock_is_counter(void)
{
    char name[32] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    return n == 4 && memcmp(name, "tsc\n", 4) == 0;
}
#else
static inline uint64_t read_counter(void)
{
    return 0;
}

static int kernel_clock_is_counter(void)
{
    return 0;
}
#endif
#endif /* EVENT_CLOCK_FAKE_SOURCES */

static uint64_t keep_forward(uint64_t t)
{
    uint64_t last = atomic_load_explicit(&last_ns, memory_order_relaxed);
    if (__builtin_expect(t < last, 0))   /* the usual way in line: a jump and one back less */
        return last;
    atomic_store_explicit(&last_ns, t, memory_order_relaxed);
    return t;
}


void event_clock_init(int allowed)
{
    if (base_ns)   /* a fork child, or a second start: the measurement holds */
        return;
    use_counter = allowed && kernel_clock_is_counter();
}

uint64_t event_clock_start_ns(void)
{
    return keep_forward(precise_ns());
}

int event_clock_uses_counter(void)
{
    return use_counter;
}

/* Renew the anchor from the clock at `t1`; measure the rate again over
 * everything since the first reading; give up on the counter if it strayed.
 * The rate is measured anew at each renewal because its first measurement
 * (10 ms) is only as good as two readings' agreement, and the longer the
 * baseline the less that matters. */
static __attribute__((noinline)) uint64_t renew(uint64_t t1)
{
    uint64_t ns = precise_ns();
    uint64_t t2 = read_counter();
    /* Interrupted between the readings (preempted, a signal): the pair says
     * little about when the clock was read.  Use the clock alone. */
    if (t2 < t1 || (calibrated && t2 - t1 > renew_ticks / 512))
        return keep_forward(ns);
    uint64_t width = t2 - t1;
    uint64_t ticks = t1 + width / 2;
    if (calibrated && ticks > anchor_ticks) {
        uint64_t guess = anchor_ns + (uint64_t)(((unsigned __int128)(ticks - anchor_ticks) * scale) >> 32);
        long long off = (long long)(guess - ns);
        if (off > STRAY_NS || off < -STRAY_NS)
            use_counter = 0;
    }
    if (!base_ns || ticks <= base_ticks) {   /* the first reading, or the counter went back */
        base_ticks = ticks;
        base_ns = ns;
        base_width = width;
        calibrated = 0;
        renew_from = 0;
    } else if (ns - base_ns >= CALIBRATE_NS) {
        /* Each midpoint is at most half its pair's width from the clock's
         * reading: together they may bend the rate by doubt / baseline. */
        uint64_t doubt = (base_width + width) / 2 + 1;
        if (doubt <= (ticks - base_ticks) / DOUBT_PER) {
            scale = (uint64_t)(((unsigned __int128)(ns - base_ns) << 32) / (ticks - base_ticks));
            renew_ticks = scale ? (RENEW_NS << 32) / scale : 0;
            calibrated = scale != 0 && renew_ticks != 0;
            renew_from = calibrated ? renew_ticks + 1 : 0;
        } else if (!calibrated && width < base_width) {   /* the first pair was the wide one */
            base_ticks = ticks;
            base_ns = ns;
            base_width = width;
        }
    }
    anchor_ticks = ticks;
    anchor_ns = ns;
    return keep_forward(ns);
}

static __attribute__((noinline)) uint64_t precise_forward(void)
{
    return keep_forward(precise_ns());
}

/* Small, its slow ways out of line, and inlined into the recorder where the
 * build has link-time optimisation (a call cost a third of its
 * instructions).  The header's declaration makes this the definition
 * other files call where it does not. */
inline __attribute__((always_inline)) uint64_t event_clock_ns(void)
{
    if (!use_counter)
        return precise_forward();
    uint64_t ticks = read_counter();
    uint64_t since = ticks - anchor_ticks;   /* huge when the counter went back */
    if (since >= renew_from)   /* !calibrated || since > renew_ticks */
        return renew(ticks);
    /* since <= renew_ticks (a millisecond): since * scale fits 64 bits */
    return keep_forward(anchor_ns + ((since * scale) >> 32));
}

inline __attribute__((always_inline)) uint64_t event_clock_early(void)
{
    /* Expected: the read in line, not a jump there and one back. */
    return __builtin_expect(atomic_load_explicit(&use_counter, memory_order_relaxed), 1) ? read_counter() : 0;
}

/* Times never go back from the one before (keep_forward), so an early read
 * that another thread's later read overtook on the way to the lock yields
 * that one's time.  A read from before the anchor (renewed meanwhile: since
 * wraps to huge) or too old to extrapolate from renews with a fresh read,
 * so that the renewal's pair is what it says. */
inline __attribute__((always_inline)) uint64_t event_clock_ns_from(uint64_t early)
{
    if (!use_counter)
        return precise_forward();
    uint64_t since = early - anchor_ticks;
    if (since >= renew_from)   /* !calibrated || since > renew_ticks */
        return renew(read_counter());
    return keep_forward(anchor_ns + ((since * scale) >> 32));
}

uint64_t event_clock_latest_ns(void)
{
    return atomic_load_explicit(&last_ns, memory_order_relaxed);
}
