/*
 * test_event_clock_pairs.c - preload/event_clock.c against a made-up counter
 * and clock, so that a thread preempted between the reads of a pair can be
 * staged exactly where it once did harm: the rate's first pair (a CI machine
 * under load: the rate came out 9 % off and an event's time 877 us early in
 * the future), the pair that completes the rate, and pairs of every width
 * later on.  Every time must stay within a microsecond of the clock read
 * around it, and the counter must stay in use (a stray would have given it
 * up, after the damage).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t now_ns = 5000000000ull; /* the true time */
static uint64_t stall_ns;               /* the next clock read comes this much late */
static uint64_t jump_ticks;             /* added to every counter read from now on */

/* 2.9 GHz, 15 ns per clock read, 5 ns per counter read. */
static uint64_t precise_ns(void)
{
    now_ns += 15 + stall_ns;
    stall_ns = 0;
    return now_ns;
}

static inline uint64_t read_counter(void)
{
    now_ns += 5;
    return now_ns / 10 * 29 + now_ns % 10 * 29 / 10 + 123456789 + jump_ticks;
}

static int kernel_clock_is_counter(void)
{
    return 1;
}

#define EVENT_CLOCK_FAKE_SOURCES
#include "event_clock.c"

#define TOLERANCE_NS 1000

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { if (failures++ < 20) { fprintf(stderr, \
    "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } } while (0)

static void reset(void)
{
    use_counter = calibrated = 0;
    scale = renew_ticks = base_ticks = base_ns = base_width = anchor_ticks = anchor_ns = 0;
    atomic_store(&last_ns, 0);
    jump_ticks = 0;
    now_ns += 1000000000ull;
    event_clock_init(1);
}

/* One event: its time must lie within the clock read before and after it. */
static void one(const char *what, long i)
{
    uint64_t before = now_ns;
    uint64_t t = event_clock_ns();
    uint64_t after = now_ns;
    CHECK(t + TOLERANCE_NS >= before && t <= after + TOLERANCE_NS,
          "%s, event %ld: %llu, %lld ns from [%llu, %llu]", what, i, (unsigned long long)t,
          t < before ? -(long long)(before - t) : (long long)(t > after ? t - after : 0),
          (unsigned long long)before, (unsigned long long)after);
}

/* `n` events `gap` ns apart; the clock read of event `stall_at` is late by `stall`. */
static void run(const char *what, long n, uint64_t gap, long stall_at, uint64_t stall)
{
    for (long i = 0; i < n; i++) {
        if (i == stall_at)
            stall_ns = stall;
        one(what, i);
        now_ns += gap;
    }
}

int main(void)
{
    /* The rate's first pair preempted for 2 ms: its midpoint is 1 ms off. */
    reset();
    run("first pair preempted", 60000, 1000, 0, 2000000);
    CHECK(use_counter && calibrated, "first pair preempted: counter %d, calibrated %d", use_counter,
          calibrated);

    /* The pair that would complete the rate (10 ms on) preempted for 3 ms. */
    reset();
    run("completing pair preempted", 60000, 1000, 10010, 3000000);
    CHECK(use_counter && calibrated, "completing pair preempted: counter %d, calibrated %d",
          use_counter, calibrated);

    /* Calibrated, then pairs preempted for 50 ns to 3 ms, now and then. */
    reset();
    run("calibrating", 20000, 1000, -1, 0);
    unsigned r = 12345;
    for (long i = 0; i < 2000000; i++) {
        r = r * 1103515245u + 12345u;
        if (r % 64 == 0)
            stall_ns = 50u << (r >> 8) % 16;   /* 50 ns .. 1.6 ms */
        one("preempted pairs", i);
        now_ns += (r >> 4) % 4000;
    }
    CHECK(use_counter && calibrated, "preempted pairs: counter %d, calibrated %d", use_counter,
          calibrated);

    /* A counter that jumps (not what the kernel's clock runs on after all):
     * given up at the next renewal, every time still the clock's. */
    reset();
    run("before the jump", 20000, 1000, -1, 0);
    jump_ticks = 29000000;   /* 10 ms */
    run("after the jump", 20000, 1000, -1, 0);
    CHECK(!use_counter, "the counter jumped by 10 ms and is still used");

    /* Early reads (event_clock_early as a hook starts, event_clock_ns_from
     * under the lock 3 us later): the time is the early read's, never one
     * before a time already given (another thread's event in between), and
     * one whose anchor was renewed or is due renews with a fresh pair (the
     * times after it stay within the tolerance, the counter in use). */
    reset();
    run("calibrating for early reads", 20000, 1000, -1, 0);
    uint64_t last = 0;
    long at_early = 0, n_early = 200000;
    for (long i = 0; i < n_early; i++) {
        uint64_t before = now_ns;
        uint64_t early = event_clock_early();
        uint64_t read_at = now_ns;
        now_ns += 3000;   /* the stack capture, the wait for the lock */
        uint64_t other = i % 7 == 0 ? event_clock_ns() : 0;
        uint64_t lock_at = now_ns;
        uint64_t t = event_clock_ns_from(early);
        CHECK(t >= last && t >= other, "early read %ld went back: %llu after %llu", i,
              (unsigned long long)t, (unsigned long long)(last > other ? last : other));
        CHECK(t + TOLERANCE_NS >= before && t <= now_ns + TOLERANCE_NS,
              "early read %ld: %llu outside [%llu, %llu]", i, (unsigned long long)t,
              (unsigned long long)before, (unsigned long long)now_ns);
        at_early += !other && t + TOLERANCE_NS >= before && t <= read_at + TOLERANCE_NS &&
                    t + TOLERANCE_NS < lock_at;
        last = t;
        now_ns += (uint64_t)(i % 5) * 1000;
        if (i % 1000 == 0)
            run("between early reads", 3, 200, -1, 0);
    }
    /* All but the renewals (one a millisecond, about one in 300 here) and
     * those behind another thread's event (one in 7). */
    CHECK(at_early > n_early * 6 / 7 * 9 / 10, "%ld of %ld early reads had the early time", at_early,
          n_early);
    CHECK(use_counter && calibrated, "early reads: counter %d, calibrated %d", use_counter, calibrated);

    if (!failures)
        printf("every time within %d ns of the clock, preempted pairs and all\n", TOLERANCE_NS);
    return failures ? 1 : 0;
}
