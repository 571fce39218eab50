/*
 * output.h - what trace-replay prints: human text, or one JSON document.
 *
 * Everything printed comes from the replay's result, the log's names and
 * stacks, in a fixed order: the same log gives the same bytes.
 */
#ifndef RP_OUTPUT_H
#define RP_OUTPUT_H

#include <stdio.h>

#include "explore.h"
#include "replay.h"
#include "stacks.h"
#include "verdict.h"

/* check --follow: the followed process, and what was done to it. */
typedef struct rp_follow_report {
    int pid;                    /* the writer, 0 when unknown */
    const char *ended;          /* how the log ended ("END record", ...) */
    const char *on_violation;   /* report, stop, abort, continue */
    const char *action;         /* what was done at the violation, or NULL */
    uint64_t violations;        /* found (continue: all of them) */
    /* The first violation: CLOCK_MONOTONIC when the event it was found at
     * was recorded, and when the follower found it (both 0: none). */
    uint64_t event_ns, found_ns;
    /* A log kept within a budget: checkpoints written beside its segments
     * (checkpoint.h), the size and write time of the last, the checkpoints
     * of deleted segments deleted, and why one could not be written (NULL). */
    uint64_t checkpoints, checkpoint_bytes, checkpoint_write_ns, checkpoints_deleted;
    const char *checkpoint_error;
} rp_follow_report;

typedef struct rp_output {
    FILE *out;
    int json;
    const char *command;        /* "check", "stats", "explore" */
    const char *model;          /* --model as given ("auto" when none was) */
    const tf_reader *reader;    /* names (NULL: ids only) */
    rn_stacks *stacks;
    int clean_end;
    const char *damage;         /* the reader's damage line, or NULL */
    int stats;                  /* add the stats section */
    const rp_explore_result *explore; /* add the explore section */
    int full_stacks;            /* text: every frame, nothing folded */
    int run;                    /* which log of the file this is, from 1 */
    uint64_t next_run;          /* another log of the file starts here (0: none) */
    const rp_follow_report *follow;   /* add the follow section */
    int violations_shown;       /* text: printed as they came, not again */
    /* A cut log: the checkpoint the check went on from, or why none was
     * used (NULL: the log was not cut, or had no checkpoint beside it). */
    const char *checkpoint;
    const char *checkpoint_path; /* the file it went on from (NULL: none) */
    uint64_t checkpoint_seq;    /* its state is after this event */
} rp_output;

void rp_output_print(const rp_output *rep, const rp_replay *r);
/* The verdict printed, and the command's exit status (verdict.h). */
void rp_output_verdict(const rp_output *rep, const rp_replay *r, rp_verdict *v);
/* One violation as it is found (check --follow --on-violation=continue):
 * text, the block check prints; JSON, one line {"kind":"violation",
 * "violation":{...}} in check's violation form.  Flushed. */
void rp_output_violation(const rp_output *rep, const rp_result *v);

#endif
