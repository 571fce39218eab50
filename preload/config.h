/*
 * config.h - the tracer's settings, read once from the environment at start.
 * docs/settings.md documents each variable.
 */
#ifndef TRACE_CONFIG_H
#define TRACE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct trace_config {
    char output[4096];         /* TRACE_OUTPUT expanded (%i as its first value); default ./trace-%p.tlog */
    int stack_depth;           /* TRACE_STACK_DEPTH: native frames kept, default 32, 0 = none */
    int python;                /* TRACE_PYTHON: Python hooks on (1, default) or off (0) */
    int host_buffers;          /* TRACE_HOST_BUFFERS: large host buffers on (1, default) or off */
    uint64_t host_threshold;   /* TRACE_HOST_THRESHOLD: bytes, default 1 MiB */
    uint32_t py_alloc_sample;  /* TRACE_PY_ALLOCS: record one GC-object allocation in N (0 = off) */
    int py_alloc_native;       /* TRACE_PY_ALLOC_NATIVE: py_alloc events with native stacks too (1), or
                                * the Python stack only (0, default: a native walk per object costs more
                                * than the rest of the event) */
    int py_alloc_all;          /* TRACE_PY_ALLOC_ALL: every object allocation (1), not only those
                                * that may be GC objects (0, default: python_alloc_sites.c) */
    int quiet;                 /* TRACE_QUIET=1: no line at exit, no warnings */
    int exit_line;             /* TRACE_EXIT_LINE: 1 always, 0 never, -1 (auto) when stderr is a terminal */
    uint64_t max_bytes;        /* TRACE_MAX_BYTES: keep the log within this many bytes (segments); 0 = no limit */
    uint32_t flush_ms;         /* TRACE_FLUSH_MS: the flusher writes at least this often, default 100 */
    uint32_t time_unit_ns;     /* TRACE_TIME_UNIT_NS: events' times are rounded down to a multiple of
                                * this, default 1000 (1 = exact) */
    int clock_counter;         /* TRACE_CLOCK: events' times from the time stamp counter where the
                                * kernel's clock is that counter (1, "auto", default) or always from
                                * CLOCK_MONOTONIC ("precise": 0) */
    int columns;               /* TRACE_COLUMNS: frames as column blocks (1) or records (0); auto
                                * (default): 1 unless TRACE_PY_ALLOCS is on */
    int cpu_baseline;          /* TRACE_CPU_FEATURES=baseline (1): the tracer's own code uses no instruction
                                * beyond x86-64's first (SSE2), as on a CPU without AVX2, POPCNT or
                                * BMI2; auto (0, default): what the CPU has */
    char rank[32];             /* from RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; "" if none */
    const char *rank_from;     /* which of them, or NULL */
} trace_config;

/* Parse the environment (called once, from the constructor). */
void trace_config_load(void);
const trace_config *trace_config_get(void);
/* A forked child writes its own log: expand %p in TRACE_OUTPUT again. */
void trace_config_set_pid(int pid);
/* The log's name for attempt n (0, 1, ...): %i becomes n; a pattern without
 * %i gets ".n" before its extension from attempt 1 on.  The file is created
 * with O_EXCL, so a name that exists (the log of the image this process
 * exec'd from, a file left by an earlier process with the same pid) moves on
 * to the next attempt.  0, or -1 when the name does not fit. */
int trace_config_output_path(char *out, size_t cap, unsigned n);
/* "key=value;..." for the log header. */
const char *trace_config_describe(void);

#endif
