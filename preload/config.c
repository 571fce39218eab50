/*
 * config.c - settings from the environment, read once at start.
 *
 * A bad value never stops the app: it costs one warning and the default.
 */
#include "config.h"
#include "warn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_OUTPUT "./trace-%p.tlog"
#define MAX_STACK_DEPTH 256

/* Defaults hold before trace_config_load() runs: hooks can fire from other
 * libraries' constructors before ours. */
static trace_config config = {
    .output = "",
    .stack_depth = 32,
    .python = 1,
    .host_buffers = 1,
    .host_threshold = 1u << 20,
    .py_alloc_sample = 0,
    .quiet = 0,
};
static char output_template[sizeof config.output] = DEFAULT_OUTPUT;
static char description[sizeof config.output + 256];

/* Copy the template into out with every %p replaced by pid ("%%" is "%"). */
static void expand_output(char *out, size_t cap, const char *tmpl, pid_t pid)
{
    size_t n = 0;
    for (const char *s = tmpl; *s && n + 1 < cap; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            int w = snprintf(out + n, cap - n, "%d", (int)pid);
            n = w > 0 && (size_t)w < cap - n ? n + (size_t)w : cap - 1;
            s++;
        } else if (s[0] == '%' && s[1] == '%') {
            out[n++] = '%';
            s++;
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
}

/* The log is created at the first write, and the app may have changed
 * directory by then: a relative path means relative to where it started. */
static void anchor_to_start_directory(void)
{
    char cwd[sizeof output_template];
    if (output_template[0] == '/' || !getcwd(cwd, sizeof cwd))
        return;
    const char *rel = output_template;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    char joined[sizeof output_template];
    if (snprintf(joined, sizeof joined, "%s/%s", strcmp(cwd, "/") ? cwd : "", rel) <
        (int)sizeof joined)
        strcpy(output_template, joined);
}

/* An integer setting in [lo, hi]; anything else warns and keeps *value. */
static void read_int(const char *name, long long lo, long long hi, long long *value)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) {
        trace_warn("ignoring %s=%s (expected an integer from %lld to %lld)", name, s, lo, hi);
        return;
    }
    *value = v;
}

static void read_flag(const char *name, int *flag)
{
    long long v = *flag;
    read_int(name, 0, 1, &v);
    *flag = (int)v;
}

static void describe(void)
{
    snprintf(description, sizeof description,
             "output=%s;stack_depth=%d;python=%d;host_buffers=%d;host_threshold=%llu;"
             "py_allocs=%u;quiet=%d",
             config.output, config.stack_depth, config.python, config.host_buffers,
             (unsigned long long)config.host_threshold, config.py_alloc_sample, config.quiet);
}

void trace_config_load(void)
{
    read_flag("TRACE_QUIET", &config.quiet);   /* first: it silences the others */

    const char *out = getenv("TRACE_OUTPUT");
    if (out && *out) {
        if (strlen(out) >= sizeof output_template)
            trace_warn("TRACE_OUTPUT is too long; using %s", DEFAULT_OUTPUT);
        else
            strcpy(output_template, out);
    }
    anchor_to_start_directory();

    long long v = config.stack_depth;
    read_int("TRACE_STACK_DEPTH", 0, MAX_STACK_DEPTH, &v);
    config.stack_depth = (int)v;
    read_flag("TRACE_PYTHON", &config.python);
    read_flag("TRACE_HOST_BUFFERS", &config.host_buffers);
    v = (long long)config.host_threshold;
    read_int("TRACE_HOST_THRESHOLD", 0, 1LL << 50, &v);
    config.host_threshold = (uint64_t)v;
    v = config.py_alloc_sample;
    read_int("TRACE_PY_ALLOCS", 0, UINT32_MAX, &v);
    config.py_alloc_sample = (uint32_t)v;

    trace_config_set_pid(getpid());
}

void trace_config_set_pid(int pid)
{
    expand_output(config.output, sizeof config.output, output_template, pid);
    describe();
}

const trace_config *trace_config_get(void)
{
    return &config;
}

const char *trace_config_describe(void)
{
    return description;
}
