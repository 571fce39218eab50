/*
 * report.h - what `trace-replay report` tells about a log, gathered in one
 * pass and then printed as text, JSON or HTML.
 *
 * The pass feeds every event to the model-free checks (checks.h: the same
 * code `check` runs) and keeps, beside them, the accounting a reader of a bug
 * report wants: memory over time, allocation sites, collections, and the
 * memory that only a collection gave back.  Stacks and strings stay ids; the
 * printers resolve them through the reader, which stays open.
 */
#ifndef RP_REPORT_H
#define RP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "finding.h"
#include "json.h"
#include "model.h"
#include "replay.h"
#include "report_series.h"
#include "stacks.h"
#include "text.h"
#include "trace_format.h"
#include "verdict.h"
#include "walk.h"

/* An allocation site: the two innermost Python frames (the allocating line
 * and its caller: when a library's Python code allocates, the caller is the
 * program's line) and the innermost native frame outside the tracer.  Any
 * may be absent (0). */
/* A site is named by the program's own line: the innermost Python frame
 * outside the standard library and installed packages (py_code/py_line).
 * When frames of a library are inside it, caller_code/caller_line is the
 * library function that line called (via_library set: "npleak.py:6 -> numpy
 * ones"); otherwise the line's own caller. */
typedef struct rpt_site {
    uint32_t py_code, py_line;
    uint32_t caller_code, caller_line;
    uint32_t via_library;
    uint64_t native_ip;
    const char *native_module;         /* the module holding native_ip then (the reader's) */
    uint32_t native_stack, py_stack;   /* stacks of its first allocation */
    uint32_t native_index;             /* native_ip's frame in native_stack */
    uint64_t dev_bytes, dev_count;     /* device memory handed to the program */
    uint64_t host_bytes, host_count;   /* large host buffers */
    uint64_t gc_dev_bytes, gc_dev_count;   /* freed only inside a collection */
    uint64_t gc_host_bytes, gc_host_count;
    /* Python objects (py_alloc, TRACE_PY_ALLOCS=1) allocated here, and
     * those of them a collection freed (py_free). */
    uint64_t obj_bytes, obj_count;
    uint64_t gc_obj_bytes, gc_obj_count;
} rpt_site;

/* Device allocations by whole stack, for the flame graph. */
typedef struct rpt_stack_tally {
    uint32_t py_stack, native_stack;
    uint64_t bytes, count;
} rpt_stack_tally;

/* Double initialisations of one type from one place. */
typedef struct rpt_double_init {
    uint32_t type_name;                /* string id */
    uint32_t native_stack, py_stack;
    uint64_t count, first_seq, first_obj;
} rpt_double_init;

typedef struct rpt_gc_gen {
    uint64_t collections, collected, uncollectable;
    uint64_t pause_ns, max_pause_ns;
} rpt_gc_gen;

/* A collection, for the chart and the trace export. */
typedef struct rpt_collection {
    uint64_t t_start, t_stop;          /* t_stop 0: never stopped */
    int32_t generation;
    uint32_t tid;
    uint64_t seq;                      /* its gc_start's */
} rpt_collection;

typedef struct rpt_peak { uint64_t bytes, seq, t_ns; } rpt_peak;

/* A memory pool seen in the log. */
typedef struct rpt_pool {
    uint32_t id;
    uint64_t ops, allocs, frees, segments;
    uint64_t peak_reserved, peak_allocated;   /* from the checks' figures */
    /* Operations that ran inside a collection that ran inside an operation
     * of the same pool (seed 000's re-entrancy), and the first of them. */
    uint64_t reentries;
    rp_site first_reentry;
    uint64_t reentered_op;                   /* seq of the operation it re-entered */
} rpt_pool;

typedef struct rpt_thread { uint32_t tid; uint64_t events; } rpt_thread;

#define RPT_MAX_VIOLATIONS 64
#define RPT_MAX_FRAMES 128              /* frames of a stack printed */
#define RPT_DINIT_PLACES_LISTED 100     /* places of one type's double initialisations in --json and --html */

typedef struct rpt {
    const tf_reader *reader;
    rn_stacks *stacks;                 /* stack ids to frames, through the reader */
    const char *path;
    uint64_t events, kinds[TF_KIND_MAX];
    uint64_t t_first, t_last;          /* monotonic ns of the first and last event */
    rpt_thread *threads;
    uint32_t nthreads;

    rpt_peak peak_reserved, peak_allocated, peak_host;
    rpt_series series;                 /* reserved, allocated, host over time */

    rpt_pool *pools;
    uint32_t npools;
    uint32_t *modules_on_stacks;       /* ids of modules some native frame is in, ascending */
    uint32_t nmodules_on_stacks;
    rpt_site *sites;
    uint32_t nsites;
    rpt_stack_tally *dev_stacks;
    uint32_t ndev_stacks;
    rpt_stack_tally *host_stacks;      /* large host buffers, the same way */
    uint32_t nhost_stacks;

    rpt_gc_gen gc[3];
    rpt_collection *collections;
    uint32_t ncollections;
    uint64_t gc_dev_bytes, gc_host_bytes;  /* totals of the sites' gc_ figures */
    /* Objects freed inside collections (py_free): those whose allocation
     * the log holds (the sites' gc_obj_ figures summed), and those it does
     * not (allocated before recording started, or in a segment deleted). */
    uint64_t gc_obj_count, gc_obj_bytes, gc_obj_unknown;
    int events_deleted;                /* segments were deleted (TRACE_MAX_BYTES): events before are gone */
    int after_fork;                    /* a fork's child: what came before is in the parent's log */
    int events_missing;                /* the log is damaged where events are missing (a frame lost, corrupt) */

    rpt_double_init *dinits;
    uint32_t ndinits;

    rp_finding violations[RPT_MAX_VIOLATIONS];
    uint32_t nviolations;
    uint64_t total_violations;
    const rp_finding *warnings;
    uint32_t nwarnings;
    uint64_t total_warnings;

    /* The pool models' verdict (trace-replay check, run in the same pass):
     * NULL with --model none. */
    const rp_result *model;
    const char *model_name;            /* "auto" or the model's name */

    int full_stacks;                   /* text: every frame (--full-stacks) */
    int run;                           /* which log of the file this is, from 1 */
    const tf_read_status *status;
    const char *damage;                /* NULL when the log is whole */
    void *priv;                        /* the pass's own state */
} rpt;

/* What rpt_open needs besides the log. */
typedef struct rpt_options {
    const char *model;                 /* NULL: no pool model; "auto": by each pool's
                                          name, as check does; or a model's name */
    const char *const *debug_dirs;     /* more places for binaries and debug files */
    int ndebug_dirs;
    const char *progress;              /* the progress line's words: "trace-replay export" */
    int run;                           /* which log of a file that holds several (0 or 1: the first) */
} rpt_options;

/* Open the log at path: 0, or -1 with a message in err (an unreadable log,
 * an unknown model).  The header, the reader and the stacks are there from
 * then on; rpt_read reads every event through one walker: the report's
 * accounting, then the pool models, then `follow` (a tool that follows the
 * log as the pass reads it, such as the export; NULL for none).  rpt_free
 * in both cases. */
int rpt_open(rpt *r, const char *path, const rpt_options *o, char *err, size_t errlen);
void rpt_read(rpt *r, const rp_subscriber *follow);

/* Memory now, as the pass counts it: device reserved, device allocated,
 * large host buffers. */
void rpt_memory_now(const rpt *r, uint64_t v[RPT_SERIES_MEASURES]);
void rpt_free(rpt *r);

/* The interpreter's version: the header's, or the one learnt later (INFO). */
const char *rpt_python_version(const rpt *r);
/* CUDA's versions, the same way (0 unknown): the driver's, and the first
 * runtime's.  As text: "CUDA driver 13000, runtime 13000 (libcudart.so.13)"
 * (every runtime the process used), or "no CUDA seen". */
int32_t rpt_cuda_driver_version(const rpt *r);
int32_t rpt_cuda_runtime_version(const rpt *r);
void rpt_cuda_text(const rpt *r, char *buf, size_t len);

/* Seconds from the start of the process (or the first event) to t_ns. */
double rpt_seconds(const rpt *r, uint64_t t_ns);

/* Sites ordered for a table: indices of the sites with nonzero figure, by
 * that figure, largest first.  which: 'd' device bytes, 'h' host bytes,
 * 'g' memory freed only inside collections (device + host), 'o' Python
 * objects freed by collections (by count, then bytes).  Caller frees. */
uint32_t *rpt_sites_by(const rpt *r, int which, uint32_t *n);
uint64_t rpt_site_figure(const rpt_site *s, int which, uint64_t *count);

/* Text for a site: "file.py:12 (func) <- main.py:3 (<module>)" and (the
 * site's native frame, or the first caller that is not an allocator entry
 * point) "func (file.c:3) libfoo.so+0x1c". */
/* The program's own code or a library's: a Python file of the standard
 * library (.../lib/python3.N/..., <frozen ...>) or of an installed package
 * (site-packages, dist-packages) is a library's.  rpt_library_name puts the
 * package or module name of such a file ("numpy", "json") in buf. */
int rpt_py_file_is_library(const char *file);
/* Did the program touch the GPU (CUDA calls, pools)?  A log without is a
 * Python program's, and its report leaves the device sections out. */
int rpt_has_device(const rpt *r);
/* Were large host blocks watched at all (TRACE_HOST_BUFFERS)?  The i-th
 * coverage gap the recorder found (INFO "not_watched"), or NULL. */
int rpt_host_watched(const rpt *r);
const char *rpt_not_watched(const rpt *r, uint32_t i);
/* The reason the double-initialisation check was off, or NULL when it ran. */
const char *rpt_double_init_off(const rpt *r);/* The value of a setting the header names ("py_allocs"), -1 when it does
 * not name it or the value is not a number. */
long rpt_setting_number(const rpt *r, const char *key);
/* The value of the log's first INFO key (read so far), or NULL. */
const char *rpt_info_value(const rpt *r, const char *key);
/* How many distinct types the double initialisations are of (r->dinits
 * has one entry per type and pair of stacks). */
uint32_t rpt_double_init_types(const rpt *r);
/* The double initialisations by type, the order every printer lists them
 * in: types with most objects first, and each type's places (its entries
 * of r->dinits) most objects first, then by first seq.  Returns the types
 * (malloc'd, *ntypes of them) and sets *ordered (malloc'd, r->ndinits
 * entries: type i's places are (*ordered)[first, first + places)); NULL
 * for both when there are none. */
typedef struct rpt_dinit_type {
    uint32_t type_name;                /* string id */
    uint32_t places, first;
    uint64_t count;                    /* objects */
} rpt_dinit_type;
rpt_dinit_type *rpt_double_inits_by_type(const rpt *r, const rpt_double_init ***ordered, uint32_t *ntypes);
/* The i-th collection still open where the log ends (the process ended,
 * or was killed, while it ran: a finalizer's abort, a crash in a
 * callback), or NULL. */
const rpt_collection *rpt_open_collection(const rpt *r, uint32_t i);
void rpt_library_name(const char *file, char *buf, size_t len);
void rpt_site_python(const rpt *r, const rpt_site *s, char *buf, size_t len);
void rpt_site_native(rn_stacks *st, const rpt_site *s, char *buf, size_t len);

/* The report's verdict (verdict.h): a pool model's violation, else the first
 * model-free one, else clean or inconclusive by the model's fidelity. */
void rpt_verdict(const rpt *r, rp_verdict *v);

/* The printers.  Each returns 0, or -1 when the output failed. */
int rpt_print_text(const rpt *r, rn_stacks *st, FILE *out);
int rpt_print_json(const rpt *r, rn_stacks *st, FILE *out);
int rpt_print_html(const rpt *r, rn_stacks *st, FILE *out);
/* Parts of the text, for the report over several logs (report_tree.h): the
 * Findings lines, and the violation the verdict names with both stacks
 * (nothing when there is none). */
void rpt_print_findings(const rpt *r, FILE *out);
void rpt_print_verdict_violation(const rpt *r, rn_stacks *st, FILE *out);
/* JSON written inside an HTML <script> element: '<' as \u003c, so that no
 * string of the log can end the element (report_html.c). */
void rpt_put_script_safe(const char *json, size_t n, FILE *out);



#endif
