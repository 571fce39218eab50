/*
 * check_follow.c - trace-replay check --follow (see check_follow.h).
 *
 * The replay is check's, fed by a source that waits for the recorder
 * (follow.h).  What is done to the traced process is done from the replay's
 * violation callback, the moment the violation is found, before anything is
 * printed: the process is stopped as close to the damage as the follower
 * can get (the flusher's interval plus the frame being read, see
 * docs/follow.md).
 */
#include "check_follow.h"

#include <inttypes.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkpoint.h"
#include "follow.h"
#include "model_inputs.h"
#include "output.h"
#include "stacks.h"
#include "verdict.h"
#include "xalloc.h"

typedef struct run {
    rp_check_follow *c;
    rp_source src;
    rp_output out;
    rp_follow_report fr;
    char action[1024];
    int acted;
    uint64_t event_ns;          /* t_ns of the event being replayed */
    /* continue: violations found while replaying the last event, printed
     * once the replay is done with it (the first is the result's own, whose
     * list of what else broke at that step the replay fills in last). */
    int first_due;
    rp_result *later;
    size_t nlater, caplater;
    uint64_t last_seq;          /* the last event replayed, 0 before the first */
    uint32_t ckpt_segment;      /* the last segment a checkpoint was written for */
    char ckpt_error[600];
} run;

int rp_on_violation_parse(const char *word)
{
    static const char *const words[] = {"report", "stop", "abort", "continue"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(word, words[i]))
            return i;
    return -1;
}

static const char *on_violation_word(rp_on_violation v)
{
    static const char *const words[] = {"report", "stop", "abort", "continue"};
    return words[v];
}

/* A line of a /proc/sys file, or "" */
static void sysctl_line(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(out, (int)cap, f))
        out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

static void stop_now(run *r)
{
    int pid = rp_follow_pid(&r->src);
    if (rp_follow_signal(&r->src, SIGSTOP) < 0) {
        snprintf(r->action, sizeof r->action, "process %d was gone before it could be stopped", pid);
        return;
    }
    char scope[32];
    sysctl_line("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof scope);
    snprintf(r->action, sizeof r->action,
             "STOPPED process %d (SIGSTOP) at this violation: it is frozen as it was.\n"
             "  look at it:   gdb -p %d          (native stacks: thread apply all bt)\n"
             "                py-spy dump --pid %d   (Python stacks)\n"
             "  then:         kill -CONT %d to let it go on, or kill -KILL %d to end it%s",
             pid, pid, pid, pid, pid,
             scope[0] && strcmp(scope, "0")
                 ? "\n  (kernel.yama.ptrace_scope is not 0: attaching needs root or CAP_SYS_PTRACE)"
                 : "");
}

static void abort_now(run *r)
{
    int pid = rp_follow_pid(&r->src);
    if (rp_follow_signal(&r->src, SIGABRT) < 0) {
        snprintf(r->action, sizeof r->action, "process %d was gone before it could be aborted", pid);
        return;
    }
    char pattern[256];
    sysctl_line("/proc/sys/kernel/core_pattern", pattern, sizeof pattern);
    snprintf(r->action, sizeof r->action,
             "ABORTED process %d (SIGABRT) at this violation: where core dumps are allowed (ulimit -c) "
             "it leaves a core of the damaged state (core_pattern: %s)",
             pid, pattern[0] ? pattern : "?");
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_violation(void *ctx, const rp_result *v)
{
    run *r = ctx;
    if (!r->fr.violations++) {
        r->fr.found_ns = monotonic_ns();
        r->fr.event_ns = r->event_ns;
    }
    switch (r->c->on_violation) {
    case RP_ON_VIOLATION_STOP:
        if (!r->acted++)
            stop_now(r);
        break;
    case RP_ON_VIOLATION_ABORT:
        if (!r->acted++)
            abort_now(r);
        break;
    case RP_ON_VIOLATION_CONTINUE:
        if (r->fr.violations == 1) {
            r->first_due = 1;
        } else {
            rp_grow(&r->later, &r->caplater, r->nlater + 1, sizeof *r->later);
            r->later[r->nlater++] = *v;
        }
        break;
    case RP_ON_VIOLATION_REPORT:
        break;
    }
}

static void print_due(run *r, const rp_replay *rep)
{
    if (!r->first_due && !r->nlater)
        return;
    rp_progress_done(&r->src.progress);
    if (r->first_due)
        rp_output_violation(&r->out, rp_replay_result(rep));
    for (size_t i = 0; i < r->nlater; i++)
        rp_output_violation(&r->out, &r->later[i]);
    r->first_due = 0;
    r->nlater = 0;
}

/* Is segment k of the log still on disk? */
static int segment_kept(const char *log_path, uint32_t k)
{
    char path[4096];
    return tf_segment_path(path, sizeof path, log_path, k) == 0 && access(path, F_OK) == 0;
}

/* A log kept within a budget: before the first event of every later
 * segment, the replay's state after the event before it goes beside that
 * segment (checkpoint.h), and the older ones go (the newest holds the
 * verdict of every event before it).  Every segment, and before its first
 * event: the recorder keeps no more than the segment it writes and the one
 * before (at a small budget), so the checkpoint a later check needs is the
 * one of the oldest segment left, whose state is after the last event
 * deleted; a checkpoint at a later point of the segment (the first quiet
 * one, as once) misses that when an operation stays open across the
 * boundary and the writer deletes the segment before.  Only while this
 * replay has seen every event (after a gap its models are off: its state is
 * of no use to anyone), and not once it stopped at a violation.  At the end
 * of the log (next NULL), one more only if the newest one's segment went. */
static void checkpoint_due(run *r, const rp_replay *rep, const tf_event *next)
{
    const tf_read_status *st = tf_reader_status(r->src.reader);
    const tf_header *h = tf_reader_header(r->src.reader);
    const char *log_path = tf_reader_log_path(r->src.reader);
    if (!h->max_bytes || !log_path || !st->segment || !r->last_seq || r->ckpt_error[0] ||
        rp_replay_result(rep)->history_lost_seq || !rp_replay_saveable(rep))
        return;
    if (!next) {
        if (r->ckpt_segment && segment_kept(log_path, r->ckpt_segment))
            return;
    } else if (st->segment <= r->ckpt_segment || next->seq != r->last_seq + 1 ||
               next->seq != st->segment_first_seq || (next->flags & TF_EVENT_AFTER_GAP)) {
        return;   /* not the first event of a segment not yet checkpointed, right after the last one replayed */
    }
    r->ckpt_segment = st->segment;
    size_t bytes;
    uint64_t t0 = monotonic_ns();
    if (rp_checkpoint_write(log_path, h, st->segment, r->last_seq, rep, &bytes, r->ckpt_error,
                            sizeof r->ckpt_error) < 0) {
        r->fr.checkpoint_error = r->ckpt_error;   /* said once; no more tries */
        return;
    }
    r->fr.checkpoint_write_ns = monotonic_ns() - t0;
    r->fr.checkpoints++;
    r->fr.checkpoint_bytes = bytes;
    r->fr.checkpoints_deleted += rp_checkpoint_prune(log_path, st->segment);
}

static const char *ended(const run *r, char *buf, size_t cap)
{
    const tf_read_status *st = tf_reader_status(r->src.reader);
    switch (rp_follow_ending(&r->src)) {
    case RP_FOLLOW_END: return "the log ended with its END record";
    case RP_FOLLOW_GONE: return "the writer is gone: the log ended without END";
    case RP_FOLLOW_INTERRUPTED:
        snprintf(buf, cap, "interrupted after event %" PRIu64, st->last_seq);
        return buf;
    default:
        snprintf(buf, cap, "stopped reading at the violation (event %" PRIu64 ")", st->last_seq);
        return buf;
    }
}

int rp_check_follow_run(rp_check_follow *c)
{
    run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    char err[512];
    rp_follow_catch_signals();
    if (rp_follow_open(&r.src, c->log, c->pid, err, sizeof err) < 0) {
        fprintf(stderr, "trace-replay: %s\n", err);
        return RP_EXIT_USAGE;
    }
    /* Stacks and options for the models, as check's (model_inputs.h). */
    rn_stacks *stacks = rn_stacks_new(r.src.reader, c->debug_dirs, c->ndebug);
    rp_options o = c->o;
    o.pool_name = rp_source_pool_name;
    o.pool_name_ctx = &r.src;
    rp_model_inputs mi;
    rp_model_inputs_init(&mi, stacks, &r.src, NULL, c->model_options, c->nmodel_options);
    rp_model_inputs_attach(&mi, &o);
    o.keep_going = c->on_violation == RP_ON_VIOLATION_CONTINUE;
    o.series = 0;
    o.on_violation = on_violation;
    o.on_violation_ctx = &r;
    r.out = (rp_output){.out = stdout, .json = c->json, .command = "check", .model = c->model_name,
                        .reader = r.src.reader, .stacks = stacks, .full_stacks = c->full_stacks, .run = 1,
                        .follow = &r.fr,
                        .violations_shown = c->on_violation == RP_ON_VIOLATION_CONTINUE};
    r.fr.on_violation = on_violation_word(c->on_violation);

    rp_replay *rep = rp_replay_new(&o);
    tf_event e = {0};
    while (r.src.next(&r.src, &e)) {
        r.event_ns = e.t_ns;
        checkpoint_due(&r, rep, &e);
        int done = rp_replay_event(rep, &e);
        r.last_seq = e.seq;
        print_due(&r, rep);
        if (done)
            break;
    }
    if (!r.acted && !rp_replay_result(rep)->violated)
        checkpoint_due(&r, rep, NULL);
    if (r.ckpt_segment) {
        const char *log_path = tf_reader_log_path(r.src.reader);
        if (log_path)
            r.fr.checkpoints_deleted += rp_checkpoint_prune(log_path, r.ckpt_segment);
    }
    rp_replay_finish(rep, rp_follow_ending(&r.src) == RP_FOLLOW_END);
    print_due(&r, rep);

    char buf[128];
    r.fr.pid = rp_follow_pid(&r.src);
    r.fr.ended = ended(&r, buf, sizeof buf);
    r.fr.action = r.action[0] ? r.action : NULL;
    rp_progress_done(&r.src.progress);
    rn_stacks_use_reader(stacks, r.src.reader);
    r.out.clean_end = tf_reader_status(r.src.reader)->clean_end;
    r.out.damage = tf_reader_damage(r.src.reader);
    rp_output_print(&r.out, rep);
    rp_verdict v;
    rp_output_verdict(&r.out, rep, &v);
    int rc = fflush(stdout) ? RP_EXIT_USAGE : v.status;
    rp_replay_free(rep);
    free(r.later);
    rp_model_inputs_free(&mi);
    rn_stacks_free(stacks);
    rp_source_close(&r.src);
    return rc;
}
