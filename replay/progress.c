/* progress.c - "trace-replay report: 1.2M events, 3 s" on a terminal, nothing elsewhere. */
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CHECK_EVERY 4096               /* events between clock reads */
#define FIRST_AFTER_NS 250000000ULL    /* quick reads show nothing */
#define REFRESH_NS 200000000ULL

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void rp_progress_start(rp_progress *p, const char *what)
{
    p->on = isatty(STDERR_FILENO) && !getenv("TRACE_NO_PROGRESS");
    p->shown = 0;
    p->what = what;
    p->ticks = 0;
    p->start_ns = p->on ? now_ns() : 0;
    p->next_ns = p->start_ns + FIRST_AFTER_NS;
}

void rp_progress_tick(rp_progress *p, uint64_t seq)
{
    if (!p->on || ++p->ticks % CHECK_EVERY)
        return;
    uint64_t t = now_ns();
    if (t < p->next_ns)
        return;
    p->next_ns = t + REFRESH_NS;
    double secs = (double)(t - p->start_ns) / 1e9;
    fprintf(stderr, "\r%s: %.1fM events, %.0f s ", p->what, (double)seq / 1e6, secs);
    p->shown = 1;
}

void rp_progress_say(rp_progress *p, const char *fmt, ...)
{
    if (!p->on)
        return;
    uint64_t t = now_ns();
    if (t < p->next_ns)
        return;
    p->next_ns = t + REFRESH_NS;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r%s: %s, %.0f s \033[K", p->what, line, (double)(t - p->start_ns) / 1e9);
    p->shown = 1;
}

void rp_progress_done(rp_progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r\033[K");
    p->shown = 0;
}
