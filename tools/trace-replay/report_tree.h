/*
 * report_tree.h - `trace-replay report` over several logs: a process tree
 * (a multiprocessing pool, a launcher and its ranks, a shell script) as one
 * story.
 *
 * Each log is read once by the single report's pass (report.h) and reduced
 * to a summary (rpt_proc: header, figures, findings, verdict; its whole JSON
 * report goes to a temporary file), so memory does not grow with the number
 * of logs.  The summaries are then linked into a tree by the headers' pid and
 * ppid (an exec'd image, same pid, hangs under the image that exec'd it) and
 * printed as text, JSON (docs/report-json.md, "Several logs") or HTML.
 *
 * The verdict is the worst of the processes' verdicts (violation, then
 * inconclusive, then clean), naming the process; the exit status is its.
 */
#ifndef RP_REPORT_TREE_H
#define RP_REPORT_TREE_H

#include <stdint.h>
#include <stdio.h>

#include "report.h"
#include "verdict.h"

/* Ranks differ from the others when a peak is this far from the ranks'
 * median: above RPT_RANK_FACTOR times it or below it divided by that, and
 * at least RPT_RANK_MIN_BYTES away (a few kilobytes more is no story).
 * With fewer than RPT_RANK_MIN_RANKS ranks no rank is named: with two,
 * which one is odd cannot be told. */
#define RPT_RANK_FACTOR 1.5
#define RPT_RANK_MIN_BYTES (16ULL << 20)
#define RPT_RANK_MIN_RANKS 3

/* One log (one process image), reduced to what the tree shows. */
typedef struct rpt_proc {
    char *path;
    int run;                           /* which log of the file, from 1 */
    uint32_t pid, ppid;
    char *hostname, *cmdline, *exe;
    char *rank;                        /* INFO rank, NULL when none */
    char *ending;                      /* INFO ending ("exit", "exec PATH", ...), NULL when none */
    uint64_t wall_start_ns, mono_start_ns, t_first, t_last;
    int clean_end;
    char *damage;
    int no_end_only;                   /* the damage: a whole log without END (the process was killed) */
    int has_device, host_watched;
    uint64_t events, threads;
    uint64_t peak[3];                  /* device reserved, device allocated, host buffers */
    uint64_t gc_dev_bytes, gc_host_bytes, double_inits, collections;
    uint64_t violations;               /* model-free checks, all of them */
    int model_violated;                /* a pool model broke an invariant */
    uint64_t model_ops, model_diverged;
    rp_verdict verdict;
    char *findings;                    /* the single report's Findings lines */
    char *violation;                   /* the violation the verdict names, with stacks ("" if none) */
    long json_off;                     /* its report's JSON in the parts file */
    size_t json_len;
    rpt_series series;                 /* its memory over time (a copy of the report's) */
    /* The tree. */
    int parent;                        /* index, or -1 (its parent left no log here) */
    char relation;                     /* 'r' root, 'c' child (fork/spawn), 'e' exec'd image */
    int depth;
    int *kids;
    uint32_t nkids;
} rpt_proc;

/* Damaged: frames lost, cut short or deleted; not a whole log that only
 * lacks its END record (counted apart: logs_without_end). */
static inline int rpt_proc_damaged(const rpt_proc *p)
{
    return p->damage && !p->no_end_only;
}

/* A log that could not be read. */
typedef struct rpt_unreadable { char *path, *error; } rpt_unreadable;

/* A rank of a distributed job: the processes whose INFO rank is its. */
typedef struct rpt_rank {
    const char *rank;
    int *procs;
    uint32_t nprocs;
    uint64_t peak[3];                  /* the largest of its processes' peaks */
    int status;                        /* worst of its processes' verdicts (RP_EXIT_*) */
    char why[512];                     /* "" unless it differs from the others */
} rpt_rank;

typedef struct rpt_tree {
    rpt_proc *procs;
    uint32_t nprocs;
    int *order;                        /* processes in tree order (depth first, children by start) */
    rpt_unreadable *bad;
    uint32_t nbad;
    rpt_rank *ranks;                   /* by peak, largest first */
    uint32_t nranks;
    int rank_measure;                  /* which peak ranks are ordered by (index into rpt_proc.peak) */
    uint64_t rank_median[3];
    uint32_t ndiffer;
    FILE *parts;                       /* the processes' JSON reports, NULL without --json/--html */
    rp_verdict verdict;
    int worst;                         /* the process the verdict names, or -1 */
    uint32_t counts[3];                /* processes clean, violation, inconclusive */
    /* What the tree held at once, at most: per host, the processes' memory
     * over time added up (each step of a series is the highest value of its
     * time bucket, held until the next step or the process's last event),
     * the highest sum; hosts' figures added (their clocks differ).  Never
     * above the sum of the peaks, never below the true figure. */
    uint64_t at_once[3];
    char *where;                       /* what was asked for, as the title says it */
} rpt_tree;

/* Read every log of paths (files; a directory stands for the logs in it, a
 * file that holds several logs for each of them) and link them.  json: keep
 * each process's JSON report for rpt_tree_print_json/html.  0, or -1 with a
 * message on stderr when nothing could be listed (a path that does not
 * exist).  Logs that cannot be read are kept in bad. */
int rpt_tree_read(rpt_tree *t, char *const *paths, int npaths, const rpt_options *o, int full_stacks, int json);
void rpt_tree_free(rpt_tree *t);

/* Names of one log given more than once (its segments, a file twice): the
 * first of each stays, in order, and the others move to the end of paths,
 * each said on stderr after prog.  Returns how many stay. */
int rpt_same_logs(char **paths, int n, const char *prog);

/* The printers: 0, or -1 when the output failed. */
int rpt_tree_print_text(const rpt_tree *t, FILE *out);
int rpt_tree_print_json(const rpt_tree *t, FILE *out);
int rpt_tree_print_html(const rpt_tree *t, FILE *out);

/* The exit status: the verdict's; 2 when a log could not be read and no
 * process had a violation. */
int rpt_tree_status(const rpt_tree *t);

#endif
