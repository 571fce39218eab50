/*
 * config.c - settings from the environment, read once at start.
 *
 * A bad value never stops the app: it costs one warning and the default.
 */
#include "config.h"
#include "warn.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_OUTPUT "./trace-%p.tlog"
#define MAX_STACK_DEPTH 256
/* TRACE_MAX_BYTES: below this a budget cannot hold the start of a run and
 * a window after it (FORMAT.md section 13). */
#define MIN_MAX_BYTES (64u << 10)

/* Defaults hold before trace_config_load() runs: hooks can fire from other
 * libraries' constructors before ours. */
static trace_config config = {
    .output = "",
    .stack_depth = 32,
    .python = 1,
    .host_buffers = 1,
    .host_threshold = 1u << 20,
    .py_alloc_sample = 0,
    .py_alloc_native = 0,
    .quiet = 0,
    .exit_line = -1,
    .flush_ms = 100,
    .time_unit_ns = 1000,
    .columns = 1,
    .clock_counter = 1,
};
static char output_template[sizeof config.output] = DEFAULT_OUTPUT;
/* The output path, then the other settings: about 210 bytes at their longest
 * values today.  describe() says so if a new setting outgrows the margin. */
static char description[sizeof config.output + 512];

static char hostname[256];
static pid_t current_pid;

/* The elements of TRACE_OUTPUT (docs/settings.md). */
static const char *element(char c, unsigned n, char *buf, size_t cap)
{
    switch (c) {
    case 'p': snprintf(buf, cap, "%d", (int)current_pid); return buf;
    case 'i': snprintf(buf, cap, "%u", n); return buf;
    case 'h': return hostname;
    case 'r': return config.rank;
    case '%': return "%";
    default: return NULL;
    }
}

/* Copy tmpl into out with its elements expanded; an unknown element is kept
 * as it is.  Returns -1 when the result does not fit. */
static int expand(char *out, size_t cap, const char *tmpl, unsigned n)
{
    size_t len = 0;
    char buf[32];
    for (const char *s = tmpl; *s; s++) {
        const char *piece = s[0] == '%' && s[1] ? element(s[1], n, buf, sizeof buf) : NULL;
        size_t k = piece ? strlen(piece) : 1;
        if (len + k >= cap)
            return -1;
        memcpy(out + len, piece ? piece : s, k);
        len += k;
        if (piece)
            s++;
    }
    out[len] = '\0';
    return 0;
}

/* "dir/name.ext" -> "dir/name.N.ext" (no extension: "dir/name.N"). */
static int insert_number(char *path, size_t cap, unsigned n)
{
    char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        dot = path + strlen(path);
    char tail[sizeof config.output];
    snprintf(tail, sizeof tail, "%s", dot);
    int w = snprintf(dot, cap - (size_t)(dot - path), ".%u%s", n, tail);
    return w > 0 && (size_t)w < cap - (size_t)(dot - path) ? 0 : -1;
}

static int has_element(const char *tmpl, char c)
{
    for (const char *s = tmpl; *s; s++)
        if (s[0] == '%' && s[1]) {
            if (s[1] == c)
                return 1;
            s++;
        }
    return 0;
}

int trace_config_output_path(char *out, size_t cap, unsigned n)
{
    if (expand(out, cap, output_template, n) < 0)
        return -1;
    if (n == 0 || has_element(output_template, 'i'))
        return 0;
    return insert_number(out, cap, n);
}

/* A host name as one path component. */
static void read_hostname(void)
{
    if (gethostname(hostname, sizeof hostname - 1) != 0)
        strcpy(hostname, "unknown");
    hostname[sizeof hostname - 1] = '\0';
    for (char *c = hostname; *c; c++)
        if (*c == '/')
            *c = '_';
}

/* The rank of a distributed job, from the first of these that is set. */
static void read_rank(void)
{
    static const char *const vars[] = { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID" };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v && strlen(v) < sizeof config.rank && !strchr(v, '/')) {
            strcpy(config.rank, v);
            config.rank_from = vars[i];
            return;
        }
    }
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

/* A setting's field in config, written with its own width (every field a
 * table entry names is an int, a uint32_t or a uint64_t, and every value
 * it takes is in range, so an int and a uint32_t take the same bits). */
static void store(size_t field, unsigned width, uint64_t v)
{
    char *at = (char *)&config + field;
    if (width == 8) {
        memcpy(at, &v, 8);
    } else {
        uint32_t v32 = (uint32_t)v;
        memcpy(at, &v32, 4);
    }
}

/* An integer in [lo, hi]; anything else warns and keeps the default. */
static int parse_int(const char *name, const char *s, long long lo, long long hi, long long *value)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) {
        trace_warn_log("ignoring %s=%s (expected an integer from %lld to %lld)", name, s, lo, hi);
        return -1;
    }
    *value = v;
    return 0;
}

/* A size in bytes, with an optional K, M or G (powers of 1024); 0 is off,
 * else at least lo. */
static int parse_size(const char *name, const char *s, uint64_t lo, uint64_t *value)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10, end++;
    else if (*end == 'M' || *end == 'm')
        shift = 20, end++;
    else if (*end == 'G' || *end == 'g')
        shift = 30, end++;
    if (errno || *end || s[0] == '-' || v > (1ULL << 50) >> shift || (v && (v << shift) < lo)) {
        trace_warn_log("ignoring %s=%s (expected 0 or a size from %llu bytes, e.g. 64M)", name, s,
                   (unsigned long long)lo);
        return -1;
    }
    *value = (uint64_t)v << shift;
    return 0;
}

/* The settings whose values are words or paths: each is called whether or
 * not its variable is set (s: NULL or "" when not), since its default may
 * depend on what was read before it. */
static void read_output(const char *name, const char *s)
{
    if (s && *s) {
        if (strlen(s) >= sizeof output_template)
            trace_warn_log("%s is too long; using %s", name, DEFAULT_OUTPUT);
        else
            strcpy(output_template, s);
    }
    anchor_to_start_directory();
}

/* Column blocks cost the flushing thread 35 to 40 ns per event: nothing at
 * the rates of GPU calls and collections, a third more CPU for a program
 * whose every GC allocation is an event.  So by default they are off when
 * TRACE_PY_ALLOCS is on (docs/settings.md), which the table reads first. */
static void read_columns(const char *name, const char *s)
{
    long long v;
    if (s && *s && strcmp(s, "auto") != 0) {
        if (parse_int(name, s, 0, 1, &v) == 0)
            config.columns = (int)v;
    } else {
        config.columns = config.py_alloc_sample == 0;
    }
}

static void read_clock(const char *name, const char *s)
{
    if (!s || !*s)
        return;
    if (strcmp(s, "precise") == 0)
        config.clock_counter = 0;
    else if (strcmp(s, "auto") != 0)
        trace_warn_log("ignoring %s=%s (expected auto or precise)", name, s);
}

/* The paths a CPU without AVX2, POPCNT or BMI2 takes (python_stack.c's
 * walk and intern, the column coder's rank sets), on any CPU: so that a
 * test on this machine can run them, and a user who suspects one of them
 * can do without. */
static void read_cpu(const char *name, const char *s)
{
    if (!s || !*s)
        return;
    if (strcmp(s, "baseline") == 0)
        config.cpu_baseline = 1;
    else if (strcmp(s, "auto") != 0)
        trace_warn_log("ignoring %s=%s (expected auto or baseline)", name, s);
}

static void read_exit_line(const char *name, const char *s)
{
    if (!s || !*s)
        return;
    if (!strcmp(s, "auto"))
        config.exit_line = -1;
    else if (!strcmp(s, "0") || !strcmp(s, "1"))
        config.exit_line = s[0] == '1';
    else
        trace_warn_log("ignoring %s=%s (expected auto, 0 or 1)", name, s);
}

/* Every setting, in the order they are read: the one table that both
 * reads the environment and tells a mistyped name from another tool's
 * (check_names).  docs/settings.md lists the same names: tests/cuda's
 * settings check sets each name documented there and expects no word
 * from check_names. */
enum setting_kind {
    FLAG,            /* 0 or 1 */
    INT,             /* an integer in [lo, hi] */
    SIZE,            /* bytes with K, M or G: 0, or at least lo */
    WORDS,           /* read() parses it */
    ELSEWHERE        /* read by the module it concerns, not here */
};
typedef struct setting {
    const char *name;
    enum setting_kind kind;
    size_t field;                    /* FLAG, INT, SIZE: where in config */
    unsigned width;                  /* and its size */
    long long lo, hi;
    void (*read)(const char *name, const char *value);    /* WORDS */
} setting;

#define FIELD(f) .field = offsetof(trace_config, f), .width = sizeof config.f
static const setting settings[] = {
    { .name = "TRACE_QUIET", .kind = FLAG, FIELD(quiet) },   /* first: it silences the others */
    { .name = "TRACE_OUTPUT", .kind = WORDS, .read = read_output },
    { .name = "TRACE_STACK_DEPTH", .kind = INT, FIELD(stack_depth), .lo = 0, .hi = MAX_STACK_DEPTH },
    { .name = "TRACE_PYTHON", .kind = FLAG, FIELD(python) },
    { .name = "TRACE_HOST_BUFFERS", .kind = FLAG, FIELD(host_buffers) },
    { .name = "TRACE_HOST_THRESHOLD", .kind = INT, FIELD(host_threshold), .lo = 0, .hi = 1LL << 50 },
    { .name = "TRACE_PY_ALLOCS", .kind = INT, FIELD(py_alloc_sample), .lo = 0, .hi = UINT32_MAX },
    { .name = "TRACE_PY_ALLOC_NATIVE", .kind = FLAG, FIELD(py_alloc_native) },
    { .name = "TRACE_PY_ALLOC_ALL", .kind = FLAG, FIELD(py_alloc_all) },
    { .name = "TRACE_MAX_BYTES", .kind = SIZE, FIELD(max_bytes), .lo = MIN_MAX_BYTES },
    { .name = "TRACE_FLUSH_MS", .kind = INT, FIELD(flush_ms), .lo = 1, .hi = 10000 },
    { .name = "TRACE_TIME_UNIT_NS", .kind = INT, FIELD(time_unit_ns), .lo = 1, .hi = 1000000000 },
    { .name = "TRACE_COLUMNS", .kind = WORDS, .read = read_columns },   /* after TRACE_PY_ALLOCS */
    { .name = "TRACE_CLOCK", .kind = WORDS, .read = read_clock },
    { .name = "TRACE_CPU_FEATURES", .kind = WORDS, .read = read_cpu },
    { .name = "TRACE_EXIT_LINE", .kind = WORDS, .read = read_exit_line },
    { .name = "TRACE_PY_DOUBLE_INIT", .kind = ELSEWHERE },   /* python_init_check.c */
    { .name = "TRACE_PY_REFTRACER", .kind = ELSEWHERE },     /* python_init_check.c */
};
#undef FIELD
#define NSETTINGS (sizeof settings / sizeof *settings)

static void read_setting(const setting *st)
{
    const char *s = getenv(st->name);
    long long v;
    uint64_t size;
    switch (st->kind) {
    case FLAG:
    case INT:
        if (s && *s && parse_int(st->name, s, st->kind == FLAG ? 0 : st->lo, st->kind == FLAG ? 1 : st->hi,
                                 &v) == 0)
            store(st->field, st->width, (uint64_t)v);
        return;
    case SIZE:
        if (s && *s && parse_size(st->name, s, (uint64_t)st->lo, &size) == 0)
            store(st->field, st->width, size);
        return;
    case WORDS:
        st->read(st->name, s);
        return;
    case ELSEWHERE:
        return;
    }
}

static void describe(void)
{
    int n = snprintf(description, sizeof description,
                     "output=%s;stack_depth=%d;python=%d;host_buffers=%d;host_threshold=%llu;"
                     "py_allocs=%u;py_alloc_native=%d;py_alloc_all=%d;quiet=%d;exit_line=%s;max_bytes=%llu;"
                     "flush_ms=%u;time_unit_ns=%u;columns=%d;clock=%s",
                     config.output, config.stack_depth, config.python, config.host_buffers,
                     (unsigned long long)config.host_threshold, config.py_alloc_sample,
                     config.py_alloc_native, config.py_alloc_all, config.quiet,
                     config.exit_line < 0 ? "auto" : config.exit_line ? "1" : "0",
                     (unsigned long long)config.max_bytes, config.flush_ms, config.time_unit_ns,
                     config.columns, config.clock_counter ? "auto" : "precise");
    /* Only where set: the default's header stays as it was. */
    if (n >= 0 && (size_t)n < sizeof description && config.cpu_baseline)
        n += snprintf(description + n, sizeof description - (size_t)n, ";cpu_features=baseline");
    if (n < 0 || (size_t)n >= sizeof description)
        trace_warn("the settings do not fit the log header's %zu bytes; stored cut short",
                   sizeof description);
}

#define NAME_MAX_CHECKED 48

/* Edit distance of a[0..na) and b[0..nb), both under NAME_MAX_CHECKED. */
static unsigned distance(const char *a, size_t na, const char *b, size_t nb)
{
    unsigned row[NAME_MAX_CHECKED + 1];
    for (size_t j = 0; j <= nb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= na; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= nb; j++) {
            unsigned up = row[j];
            unsigned best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

/* A mistyped setting was ignored without a word (TRACE_OUT=... for
 * TRACE_OUTPUT wrote ./trace-PID.tlog).  Other software uses the prefix
 * too (this project's own scripts export TRACE_LIB, TRACE_REPLAY, ...), so
 * only a name close to one of ours is named: at most 2 edits away, or the
 * start of one (3 letters or more after the prefix).  Reads environ once,
 * at start; no allocation. */
static void check_names(void)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : 0;
        if (n <= 6 || n >= NAME_MAX_CHECKED || strncmp(*e, "TRACE_", 6) != 0)
            continue;
        const char *near = NULL;
        unsigned best = 3;
        for (size_t i = 0; i < NSETTINGS; i++) {
            const char *known = settings[i].name;
            size_t k = strlen(known);
            if (k == n && strncmp(known, *e, n) == 0) {
                near = NULL;
                break;   /* a setting */
            }
            unsigned d = distance(*e + 6, n - 6, known + 6, k - 6);
            if (d > 2 && n - 6 >= 3 && k > n && strncmp(known, *e, n) == 0)
                d = 2;   /* its start: TRACE_OUT */
            if (d < best) {
                best = d;
                near = known;
            }
        }
        if (near)
            trace_warn_log("ignoring %.*s: not a setting (did you mean %s? docs/settings.md)", (int)n, *e,
                           near);
    }
}

void trace_config_load(void)
{
    read_setting(&settings[0]);   /* TRACE_QUIET: it silences the others */
    read_hostname();
    read_rank();
    for (size_t i = 1; i < NSETTINGS; i++)
        read_setting(&settings[i]);
    check_names();

    trace_config_set_pid(getpid());
}

void trace_config_set_pid(int pid)
{
    current_pid = pid;
    if (trace_config_output_path(config.output, sizeof config.output, 0) < 0)
        snprintf(config.output, sizeof config.output, "%s", output_template);
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
