/*
 * test_config.c - the settings table (preload/config.c) on its own: each
 * setting read from the environment into its field at its own width, a bad
 * value warned about with the default kept, TRACE_COLUMNS's default after
 * TRACE_PY_ALLOCS, and a mistyped name told from other tools' names.
 *
 * config.c keeps one static config, read once per process: each case runs
 * in a child of its own, with its environment.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* warn.c's voice, replaced: the lines said, one after another. */
static char said[4096];

static void keep(const char *fmt, va_list ap)
{
    size_t n = strlen(said);
    vsnprintf(said + n, sizeof said - n, fmt, ap);
    n = strlen(said);
    if (n + 1 < sizeof said) {
        said[n] = '\n';
        said[n + 1] = '\0';
    }
}

void trace_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    keep(fmt, ap);
    va_end(ap);
}

void trace_warn_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    keep(fmt, ap);
    va_end(ap);
}

static int failed;

#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "%s:%d: %s (said: %s)\n", __FILE__, __LINE__, #cond, said);          \
            failed = 1;                                                                          \
        }                                                                                        \
    } while (0)

/* The environment of one case: NAME=VALUE strings, NULL-terminated. */
typedef void (*check_fn)(const trace_config *c);

static void run_case(const char *what, const char *const *env, check_fn check)
{
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        failed = 0;             /* this case's own */
        clearenv();
        for (const char *const *e = env; *e; e++)
            putenv((char *)*e);
        trace_config_load();
        check(trace_config_get());
        _exit(failed);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "case failed: %s\n", what);
        failed = 1;
    }
}

static void check_defaults(const trace_config *c)
{
    CHECK(c->stack_depth == 32 && c->python == 1 && c->host_buffers == 1);
    CHECK(c->host_threshold == 1u << 20 && c->py_alloc_sample == 0 && c->py_alloc_native == 0);
    CHECK(c->py_alloc_all == 0 && c->quiet == 0 && c->exit_line == -1 && c->max_bytes == 0);
    CHECK(c->flush_ms == 100 && c->time_unit_ns == 1000 && c->columns == 1 && c->clock_counter == 1);
    CHECK(c->cpu_baseline == 0 && strstr(trace_config_describe(), "cpu_features=") == NULL);
    CHECK(c->output[0] == '/' && strstr(c->output, "/trace-") != NULL);
    CHECK(said[0] == '\0');
}

static void check_good(const trace_config *c)
{
    CHECK(c->stack_depth == 7 && c->python == 0 && c->host_buffers == 0);
    CHECK(c->host_threshold == (1ull << 40));  /* past 32 bits: the field's own width */
    CHECK(c->py_alloc_sample == 4000000000u);  /* past INT_MAX, a uint32_t */
    CHECK(c->py_alloc_native == 1 && c->py_alloc_all == 1 && c->quiet == 1 && c->exit_line == 1);
    CHECK(c->max_bytes == 3ull << 30 && c->flush_ms == 250 && c->time_unit_ns == 1);
    CHECK(c->columns == 1);                    /* set: py_allocs does not turn it off */
    CHECK(c->clock_counter == 0);
    CHECK(c->cpu_baseline == 1 && strstr(trace_config_describe(), ";cpu_features=baseline") != NULL);
    char want[64];
    snprintf(want, sizeof want, "/tmp/x-%d.tlog", (int)getpid());
    CHECK(strcmp(c->output, want) == 0);
    CHECK(said[0] == '\0');
}

/* Every bad value: one line each, naming the setting, the default kept. */
static void check_bad(const trace_config *c)
{
    char copy[sizeof said];
    snprintf(copy, sizeof copy, "%s", said);
    said[0] = '\0';
    check_defaults(c);
    snprintf(said, sizeof said, "%s", copy);
    static const char *const lines[] = {
        "ignoring TRACE_STACK_DEPTH=257 (expected an integer from 0 to 256)",
        "ignoring TRACE_PYTHON=2 (expected an integer from 0 to 1)",
        "ignoring TRACE_HOST_THRESHOLD=-1 (expected an integer from 0 to 1125899906842624)",
        "ignoring TRACE_PY_ALLOCS=4294967296 (expected an integer from 0 to 4294967295)",
        "ignoring TRACE_MAX_BYTES=1K (expected 0 or a size from 65536 bytes, e.g. 64M)",
        "ignoring TRACE_FLUSH_MS=0 (expected an integer from 1 to 10000)",
        "ignoring TRACE_TIME_UNIT_NS=us (expected an integer from 1 to 1000000000)",
        "ignoring TRACE_COLUMNS=yes (expected an integer from 0 to 1)",
        "ignoring TRACE_CLOCK=fast (expected auto or precise)",
        "ignoring TRACE_CPU_FEATURES=avx2 (expected auto or baseline)",
        "ignoring TRACE_EXIT_LINE=2 (expected auto, 0 or 1)",
    };
    int n = 0;
    for (const char *s = said; *s; s++)
        n += *s == '\n';
    CHECK(n == (int)(sizeof lines / sizeof *lines));
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        CHECK(strstr(said, lines[i]) != NULL);
}

static void check_columns_auto(const trace_config *c)
{
    CHECK(c->py_alloc_sample == 1 && c->columns == 0);
    CHECK(said[0] == '\0');
}

static void check_columns_auto_word(const trace_config *c)
{
    CHECK(c->py_alloc_sample == 1 && c->columns == 0);
    CHECK(said[0] == '\0');
}

static void check_names_case(const trace_config *c)
{
    CHECK(c->stack_depth == 32);
    CHECK(strstr(said, "ignoring TRACE_OUT: not a setting (did you mean TRACE_OUTPUT?") != NULL);
    CHECK(strstr(said, "ignoring TRACE_PY_ALLOC: not a setting (did you mean TRACE_PY_ALLOCS?") != NULL);
    CHECK(strstr(said, "ignoring TRACE_STACK_DEPHT: not a setting (did you mean TRACE_STACK_DEPTH?") !=
          NULL);
    /* Other tools' names, and the settings read by other modules. */
    CHECK(strstr(said, "TRACE_LIB") == NULL && strstr(said, "TRACE_REPLAY") == NULL);
    CHECK(strstr(said, "TRACE_PY_REFTRACER") == NULL && strstr(said, "TRACE_PY_DOUBLE_INIT") == NULL);
    int n = 0;
    for (const char *s = said; *s; s++)
        n += *s == '\n';
    CHECK(n == 3);
}

/* TRACE_QUIET is read, and a bad value after it still reaches warn.c
 * (which keeps it off the terminal, and puts it in the log). */
static void check_quiet(const trace_config *c)
{
    CHECK(c->quiet == 1 && c->stack_depth == 32);
    CHECK(strstr(said, "ignoring TRACE_STACK_DEPTH=x") != NULL);
}

int main(void)
{
    static const char *const none[] = { NULL };
    run_case("defaults", none, check_defaults);
    static const char *const good[] = {
        "TRACE_STACK_DEPTH=7", "TRACE_PYTHON=0", "TRACE_HOST_BUFFERS=0",
        "TRACE_HOST_THRESHOLD=1099511627776", "TRACE_PY_ALLOCS=4000000000", "TRACE_PY_ALLOC_NATIVE=1",
        "TRACE_PY_ALLOC_ALL=1", "TRACE_QUIET=1", "TRACE_EXIT_LINE=1", "TRACE_MAX_BYTES=3G",
        "TRACE_FLUSH_MS=250", "TRACE_TIME_UNIT_NS=1", "TRACE_COLUMNS=1", "TRACE_CLOCK=precise",
        "TRACE_CPU_FEATURES=baseline", "TRACE_OUTPUT=/tmp/x-%p.tlog", NULL,
    };
    run_case("every setting set", good, check_good);
    static const char *const bad[] = {
        "TRACE_STACK_DEPTH=257", "TRACE_PYTHON=2", "TRACE_HOST_THRESHOLD=-1",
        "TRACE_PY_ALLOCS=4294967296", "TRACE_MAX_BYTES=1K", "TRACE_FLUSH_MS=0",
        "TRACE_TIME_UNIT_NS=us", "TRACE_COLUMNS=yes", "TRACE_CLOCK=fast", "TRACE_CPU_FEATURES=avx2", "TRACE_EXIT_LINE=2",
        "TRACE_HOST_BUFFERS=", "TRACE_PY_ALLOC_ALL=", NULL,
    };
    run_case("bad values", bad, check_bad);
    static const char *const cols[] = { "TRACE_PY_ALLOCS=1", NULL };
    run_case("columns off with py_allocs", cols, check_columns_auto);
    static const char *const cols_word[] = { "TRACE_PY_ALLOCS=1", "TRACE_COLUMNS=auto", NULL };
    run_case("columns=auto with py_allocs", cols_word, check_columns_auto_word);
    static const char *const names[] = {
        "TRACE_OUT=/tmp/y.tlog", "TRACE_PY_ALLOC=1", "TRACE_STACK_DEPHT=3", "TRACE_LIB=/x.so",
        "TRACE_REPLAY=/bin/true", "TRACE_PY_REFTRACER=1", "TRACE_PY_DOUBLE_INIT=0", NULL,
    };
    run_case("names", names, check_names_case);
    static const char *const quiet[] = { "TRACE_STACK_DEPTH=x", "TRACE_QUIET=1", NULL };
    run_case("quiet", quiet, check_quiet);
    if (!failed)
        printf("config: every case passed\n");
    return failed;
}
