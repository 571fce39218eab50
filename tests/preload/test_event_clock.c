/*
 * test_event_clock.c - events' times (preload/event_clock.c): never back,
 * within a few microseconds of CLOCK_MONOTONIC read around them across many
 * renewals of the anchor, the counter kept where the kernel's clock is the
 * counter, and TRACE_CLOCK=precise (allowed = 0) honoured.
 */
#include "event_clock.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOLERANCE_NS 20000ll   /* the module gives up on the counter past 50 us */

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", \
    __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static uint64_t monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pause_ns(long ns)
{
    struct timespec ts = { 0, ns };
    nanosleep(&ts, NULL);
}

static int kernel_clock_is_tsc(char *name, size_t cap)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, name, cap - 1) : -1;
    if (fd >= 0)
        close(fd);
    name[n > 0 ? n : 0] = '\0';
    if (n > 0 && name[n - 1] == '\n')
        name[n - 1] = '\0';
    return strcmp(name, "tsc") == 0;
}

/* `rounds` reads, each between two readings of the kernel's clock, with
 * pauses of up to `pause` ns between them (renewals of the anchor, the
 * measurement of the rate).  Returns the largest distance seen. */
static long long agree(int rounds, long pause)
{
    uint64_t last = 0;
    long long worst = 0;
    unsigned r = 12345;
    for (int i = 0; i < rounds; i++) {
        uint64_t before = monotonic();
        uint64_t t = event_clock_ns();
        uint64_t after = monotonic();
        CHECK(t >= last, "read %d went back: %llu after %llu", i, (unsigned long long)t,
              (unsigned long long)last);
        long long early = (long long)before - (long long)t, late = (long long)t - (long long)after;
        if (early > worst)
            worst = early;
        if (late > worst)
            worst = late;
        CHECK(early <= TOLERANCE_NS && late <= TOLERANCE_NS,
              "read %d: %llu not within %lld ns of [%llu, %llu]", i, (unsigned long long)t,
              TOLERANCE_NS, (unsigned long long)before, (unsigned long long)after);
        last = t;
        r = r * 1103515245u + 12345u;
        if (pause && r % 8 == 0)
            pause_ns((long)(r >> 8) % pause);
    }
    return worst;
}

int main(void)
{
    char source[64];
    int tsc = kernel_clock_is_tsc(source, sizeof source);
#if !defined(__x86_64__)
    tsc = 0;
#endif

    /* Not allowed (TRACE_CLOCK=precise): every read is the kernel's. */
    pid_t child = fork();
    if (child == 0) {
        event_clock_init(0);
        agree(20000, 200000);
        int ok = !event_clock_uses_counter();
        _exit(failures || !ok ? 1 : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "precise mode failed in the child");

    event_clock_init(1);
    CHECK(event_clock_uses_counter() == tsc, "counter %d where the kernel's clocksource is %s",
          event_clock_uses_counter(), source);
    uint64_t start = event_clock_start_ns();
    uint64_t first = event_clock_ns();
    CHECK(first >= start, "an event before the header's start");
    /* Dense reads (the fast path), then sparse ones over about 1.5 s (renewals
     * every millisecond, the rate measured over a growing baseline). */
    long long dense = agree(2000000, 0);
    long long sparse = agree(8000, 3000000);
    CHECK(event_clock_uses_counter() == tsc, "gave up on the counter (clocksource %s)", source);

    /* A fork child goes on from the parent's measurement. */
    child = fork();
    if (child == 0) {
        event_clock_init(1);
        agree(100000, 100000);
        _exit(failures || event_clock_uses_counter() != tsc ? 1 : 0);
    }
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the fork child failed");

    printf("clocksource %s: %s; largest distance from CLOCK_MONOTONIC %lld ns (dense), %lld ns "
           "(sparse)\n", source, event_clock_uses_counter() ? "counter" : "kernel clock", dense,
           sparse);
    return failures ? 1 : 0;
}
