/*
 * main.c - trace-replay: the command line.
 *
 *     trace-replay check|stats|explore LOG [options]
 *     trace-replay minimize LOG -o OUT [options]
 *     trace-replay report|export|import ...   (commands.h: options of their own)
 *
 * Exit status: the verdict's (verdict.h): 0 clean, 1 violation, 2 usage error
 * or unreadable log, 3 inconclusive.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "check_follow.h"
#include "checkpoint.h"
#include "commands.h"
#include "explore.h"
#include "minimize.h"
#include "model_inputs.h"
#include "output.h"
#include "replay.h"
#include "source.h"
#include "state.h"
#include "text.h"
#include "verdict.h"

#define MAX_DEBUG_DIRS 16
#define MAX_MODEL_OPTIONS 32

typedef struct cli {
    const char *command, *log, *out_path, *model_name;
    rp_options o;
    int json, full_stacks, run;
    int follow, pid, on_violation;   /* check --follow, --pid, --on-violation (-1: not given) */
    const char *debug_dirs[MAX_DEBUG_DIRS];
    int ndebug;
    const char *model_options[MAX_MODEL_OPTIONS];   /* KEY=VALUE */
    int nmodel_options;
    uint64_t restart_at;   /* --restart-at N: through a saved state after event N (0: no) */
    size_t max_replays;    /* minimize --max-replays N (0: its default) */
} cli;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trace-replay COMMAND LOG [options]\n"
            "commands:\n"
            "  check     re-drive the pool model over the log, stop at the first violation\n"
            "  stats     peak reserved/allocated bytes, fragmentation, segments over time\n"
            "  explore   inject a collection at each re-entrancy point; report the first that breaks\n"
            "  minimize  shrink a violating log to a small one that breaks the same invariant (-o OUT)\n"
            "  report    a summary for people (--json, --html OUT); see trace-replay report --help\n"
            "  export    --perfetto OUT: the log for ui.perfetto.dev; see trace-replay export --help\n"
            "  import    JSON lines (trace-dump --json's schema) to a log (-o OUT)\n"
            "options:\n"
            "  --model NAME     pool model (default auto: chosen from the pool's name, else none):\n");
    for (int i = 0; rp_models[i]; i++)
        fprintf(f, "                     %-10s %s\n", rp_models[i]->name, rp_models[i]->summary);
    fprintf(f,
            "                     %-10s model-free checks only\n"
            "  --pool NAME|ID   replay this pool only (default: every pool, each with the model)\n"
            "  --paranoid       full audit of the model after every operation\n"
            "  --json           one JSON document on stdout\n"
            "  --full-stacks    every frame (default: runs of interpreter, start-up and tracer\n"
            "                   frames folded into one line, a Python frame repeated in a row\n"
            "                   shown three times)\n"
            "  --debug-dir DIR  more places to find binaries and debug files (repeatable)\n"
            "  --model-option KEY=VALUE  an option the run used, over the log's (repeatable;\n"
            "                   e.g. bfc.memory_limit=16G, torch.alloc_conf=expandable_segments:True,\n"
            "                   cupy_version=5.2.0; see docs/models.md)\n"
            "  --run N          the N-th log of a file that holds several (logs joined with cat)\n"
            "  -o OUT           minimize: where to write the smaller log (never the log itself)\n"
            "  --max-replays N  minimize: stop the search after N replays (default 20000), keeping\n"
            "                   what it has: still breaking the invariant, only less small\n"
            "check --follow LOG: check the log while it is written; wait for it to appear, read each\n"
            "  frame as the recorder writes it, end at END or once the writer is gone (docs/follow.md)\n"
            "  --on-violation=report|stop|abort|continue\n"
            "                   at a violation: report it and end (default); stop the process (SIGSTOP)\n"
            "                   to look at it with gdb -p PID or py-spy dump --pid PID; abort it (SIGABRT,\n"
            "                   a core of the damage); or report every violation as it comes (--json: one\n"
            "                   line each, then the document)\n"
            "  --pid PID        the process that will write LOG (ends the wait if it ends without one)\n"
            "  --restart-at N   check, stats: after event N (operations open or not; after the event it\n"
            "                   stopped at, if it did), save the replay's state, start a new replay from it\n"
            "                   and go on (the output is the same as without: a test of checkpoints,\n"
            "                   docs/follow.md)\n"
            "  --version        the version of trace-replay and of the log format it reads\n"
            "exit status (each command ends on one line: verdict: ...):\n"
            "  0  clean: no invariant broke, and the model followed the log\n"
            "  1  VIOLATION: an invariant broke (explore: an injected collection breaks one;\n"
            "     minimize: the smaller log was written and still breaks it)\n"
            "  2  usage error, or a log that cannot be read\n"
            "  3  INCONCLUSIVE: no violation, but the model diverged from the log on more than\n"
            "     %d%% of its answers: a clean result cannot be trusted\n"
            "report, export and import: see their --help.\n",
            "none", RP_TRUST_DIVERGED_PERMILLE / 10);
}

static void version(void)
{
    printf("trace-replay %s (log format %d.%d)\n", TRACE_VERSION, TF_VERSION_MAJOR, TF_VERSION_MINOR);
}

/* An unknown --model: one line that names the known ones. */
static void unknown_model(const char *name)
{
    char known[256] = "";
    for (int i = 0; rp_models[i]; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s, ", rp_models[i]->name);
    char shown[128];
    fprintf(stderr, "trace-replay: unknown model '%s' (known: %sauto, none)\n", rn_text(shown, sizeof shown, name),
            known);
}

static int parse_args(cli *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'}, {"pool", required_argument, NULL, 'p'},
        {"paranoid", no_argument, NULL, 'P'},    {"json", no_argument, NULL, 'j'},
        {"debug-dir", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {"model-option", required_argument, NULL, 'O'},
        {"full-stacks", no_argument, NULL, 'F'}, {"version", no_argument, NULL, 'V'},
        {"run", required_argument, NULL, 'r'},
        {"follow", no_argument, NULL, 'W'},      {"on-violation", required_argument, NULL, 'X'},
        {"pid", required_argument, NULL, 'I'},
        {"restart-at", required_argument, NULL, 'R'},
        {"max-replays", required_argument, NULL, 'M'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    memset(c, 0, sizeof *c);
    c->on_violation = -1;
    c->o.model_auto = 1;
    c->model_name = "auto";
    while ((ch = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            c->model_name = optarg;
            c->o.model_auto = !strcmp(optarg, "auto");
            if (strcmp(optarg, "none") && !c->o.model_auto && !(c->o.model = rp_model_find(optarg))) {
                unknown_model(optarg);
                return -2;
            }
            break;
        case 'p': c->o.pool = optarg; break;
        case 'P': c->o.paranoid = 1; break;
        case 'j': c->json = 1; break;
        case 'F': c->full_stacks = 1; break;
        case 'r':
            c->run = atoi(optarg);
            if (c->run < 1) {
                fprintf(stderr, "trace-replay: --run wants a number from 1, got '%s'\n", optarg);
                return -2;
            }
            break;
        case 'o': c->out_path = optarg; break;
        case 'd':
            if (c->ndebug == MAX_DEBUG_DIRS) {
                fprintf(stderr, "trace-replay: at most %d --debug-dir\n", MAX_DEBUG_DIRS);
                return -2;
            }
            c->debug_dirs[c->ndebug++] = optarg;
            break;
        case 'O':
            if (c->nmodel_options == MAX_MODEL_OPTIONS || !strchr(optarg, '=')) {
                fprintf(stderr, "trace-replay: --model-option wants KEY=VALUE (at most %d)\n", MAX_MODEL_OPTIONS);
                return -2;
            }
            c->model_options[c->nmodel_options++] = optarg;
            break;
        case 'W': c->follow = 1; break;
        case 'X':
            if ((c->on_violation = rp_on_violation_parse(optarg)) < 0) {
                char shown[64];
                fprintf(stderr, "trace-replay: --on-violation takes report, stop, abort or continue, not '%s'\n",
                        rn_text(shown, sizeof shown, optarg));
                return -2;
            }
            break;
        case 'I': c->pid = atoi(optarg); break;
        case 'R': c->restart_at = strtoull(optarg, NULL, 10); break;
        case 'M': {
            char *end;
            unsigned long long n = strtoull(optarg, &end, 10);
            if (!*optarg || *end || n == 0 || optarg[0] == '-') {
                fprintf(stderr, "trace-replay: --max-replays wants a number from 1, got '%s'\n", optarg);
                return -2;
            }
            c->max_replays = (size_t)n;
            break;
        }
        case 'h': usage(stdout); exit(0);
        case 'V': version(); exit(0);
        default: return -1;
        }
    }
    if (argc - optind != 2)
        return -1;
    c->command = argv[optind];
    c->log = argv[optind + 1];
    if (strcmp(c->command, "check") && strcmp(c->command, "stats") && strcmp(c->command, "explore") &&
        strcmp(c->command, "minimize")) {
        fprintf(stderr, "trace-replay: unknown command '%s' (commands: check, stats, explore, minimize, report, "
                        "export, import)\n", c->command);
        return -2;
    }
    if (!strcmp(c->command, "minimize") && !c->out_path) {
        fprintf(stderr, "trace-replay: minimize needs -o OUT\n");
        return -2;
    }
    if ((c->on_violation >= 0 || c->pid) && !c->follow) {
        fprintf(stderr, "trace-replay: --on-violation and --pid go with check --follow\n");
        return -2;
    }
    if (c->follow && strcmp(c->command, "check")) {
        fprintf(stderr, "trace-replay: --follow goes with check\n");
        return -2;
    }
    if (c->follow && c->run > 1) {
        fprintf(stderr, "trace-replay: --follow reads the log being written, not --run %d\n", c->run);
        return -2;
    }
    return 0;
}

/* minimize writes a new log: never over the one it reads. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* --restart-at: the replay r goes on as a new one loaded from its state,
 * as a check that starts from a checkpoint does (NULL: it did not load). */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static rp_replay *restarted(rp_replay *r, const rp_options *o, uint64_t seq)
{
    rp_state_w payload = {0}, sealed = {0};
    double t0 = now_ms();
    rp_replay_save(r, &payload);
    rp_state_seal(&payload, &sealed);
    double t1 = now_ms();
    rp_state_w_free(&payload);
    rp_replay_free(r);
    rp_state_r st;
    char err[512];
    double t2 = now_ms();
    rp_replay *n = rp_replay_new(o);
    if (rp_state_open(sealed.buf, sealed.len, &st, err, sizeof err) < 0 || rp_replay_load(n, &st, err, sizeof err) < 0) {
        fprintf(stderr, "trace-replay: --restart-at: %s\n", err);
        rp_replay_free(n);
        n = NULL;
    } else {
        fprintf(stderr, "trace-replay: restarted from the state after event %llu, %zu operation(s) being gathered "
                "(%zu bytes; saved in %.2f ms, loaded in %.2f ms)\n", (unsigned long long)seq,
                rp_replay_gathering(n), sealed.len, t1 - t0, now_ms() - t2);
    }
    rp_state_w_free(&sealed);
    return n;
}

/* Where a check of a cut log went on from a checkpoint, for the output. */
typedef struct started {
    char text[8192];            /* the sentence the output says ("" when none) */
    char path[4096];
    uint64_t seq;
    rp_checkpoint ckpt;         /* the state itself (state NULL: none) */
} started;

/* Events are missing before e (segments deleted to keep the log within its
 * budget): the newest state of the replay that a follower saw them with,
 * if there is one (checkpoint.h).  Returns the replay to go on with (r, or
 * one loaded from the checkpoint: then *skip_to is the checkpoint's event). */
static rp_replay *after_gap(rp_replay *r, const rp_options *o, rp_source *src, const tf_event *e, uint64_t *skip_to,
                            started *from)
{
    const char *log_path = tf_reader_log_path(src->reader);
    const tf_header *h = tf_reader_header(src->reader);
    if (!log_path || !h->max_bytes)
        return r;
    rp_checkpoint c;
    char why[1200], err[512];
    if (!rp_checkpoint_find(log_path, h, tf_reader_status(src->reader)->segment, e->seq, &c, why, sizeof why)) {
        if (why[0])
            snprintf(from->text, sizeof from->text, "%s; the checks go on with partial history", why);
        return r;
    }
    rp_replay *n = rp_checkpoint_start(&c, o, err, sizeof err);
    if (!n) {
        snprintf(from->text, sizeof from->text, "checkpoint %s not used: %s; the checks go on with partial history",
                 c.path, err);
        rp_checkpoint_free(&c);
        return r;
    }
    snprintf(from->text, sizeof from->text,
             "%s%sthe log was cut; the check went on from checkpoint %s: the replay's state after event %llu, saved "
             "by check --follow, which read every event before it (the pool models included): the events after it "
             "are checked as by a check of the whole log",
             why, why[0] ? "; " : "", c.path, (unsigned long long)c.seq);
    snprintf(from->path, sizeof from->path, "%s", c.path);
    from->seq = c.seq;
    *skip_to = c.seq;
    rp_checkpoint_free(&from->ckpt);
    from->ckpt = c;
    rp_replay_free(r);
    return n;
}

/* The log itself starts from a state (minimize's reproducer of a check that
 * went on from a checkpoint).  One that does not load (another build) is
 * like the start of a cut log: partial history from the first event. */
static rp_replay *in_log_state(rp_replay *r, const rp_options *o, rp_source *src, const tf_event *e, started *from)
{
    rp_checkpoint c;
    char err[512];
    if (!rp_checkpoint_in_log(src->reader, &c))
        return r;
    rp_replay *n = rp_checkpoint_start(&c, o, err, sizeof err);
    if (!n) {
        rp_checkpoint_free(&c);
        snprintf(from->text, sizeof from->text, "the log starts from a replay state (after event %llu) that this "
                 "trace-replay cannot load: %s; the checks go on with partial history", (unsigned long long)c.seq, err);
        rp_replay_history_lost(r, e->seq);
        return r;
    }
    rp_checkpoint_free(&from->ckpt);
    from->ckpt = c;
    snprintf(from->text, sizeof from->text,
             "the log starts from a replay state (its CHECKPOINT record, after event %llu): a reproducer minimize "
             "wrote from a check that went on from a checkpoint", (unsigned long long)c.seq);
    from->seq = c.seq;
    rp_replay_free(r);
    return n;
}

static rp_replay *run_replay(const rp_options *o, rp_source *src, uint64_t restart_at, started *from)
{
    rp_replay *r = rp_replay_new(o);
    tf_event e;
    uint64_t skip_to = 0;
    int first = 1;
    while (src->next(src, &e)) {
        if (first && src->reader)
            r = in_log_state(r, o, src, &e, from);
        first = 0;
        if ((e.flags & TF_EVENT_AFTER_GAP) && src->reader)
            r = after_gap(r, o, src, &e, &skip_to, from);
        if (e.seq <= skip_to)
            continue;   /* in the state already */
        if (skip_to && e.seq == skip_to + 1)
            e.flags &= ~TF_EVENT_AFTER_GAP;   /* what is missing before it the state holds (a later gap stays one) */
        if (rp_replay_event(r, &e))
            break;
        if (restart_at && e.seq >= restart_at && rp_replay_saveable(r)) {
            restart_at = 0;
            if (!(r = restarted(r, o, e.seq)))
                return NULL;
        }
    }
    rp_replay_finish(r, rp_source_clean_end(src));
    return r;
}

/* --pool naming no pool of the log is a mistake, not a clean replay. */
static int pool_missing(const cli *c, const rp_replay *r, const rp_source *src)
{
    if (!c->o.pool || rp_replay_pools_selected(r))
        return 0;
    if (rp_replay_result(r)->violated && !c->o.keep_going)
        return 0;   /* it stopped early: the pool may come later */
    char shown[128], list[512] = "";
    uint32_t id;
    const char *name;
    for (uint32_t i = 0; tf_reader_pool_at(src->reader, i, &id, &name) && strlen(list) < sizeof list - 64; i++) {
        char n[64];
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u \"%s\"", i ? ", " : "", id,
                 rn_text(n, sizeof n, name));
    }
    fprintf(stderr, "trace-replay: --pool %s: the log has no such pool (%s%s)\n",
            rn_text(shown, sizeof shown, c->o.pool), *list ? "pools: " : "no pool at all", list);
    return 1;
}

static int print(const cli *c, rp_source *src, rn_stacks *st, const rp_replay *r, const rp_explore_result *x,
                 const struct started *from)
{
    rp_progress_done(&src->progress);   /* a replay that stopped early left it shown */
    if (pool_missing(c, r, src))
        return RP_EXIT_USAGE;
    rn_stacks_use_reader(st, src->reader);
    rp_output out = {.out = stdout, .json = c->json, .command = c->command, .model = c->model_name,
                     .reader = src->reader, .stacks = st, .clean_end = rp_source_clean_end(src),
                     .damage = tf_reader_damage(src->reader), .stats = !strcmp(c->command, "stats"), .explore = x,
                     .full_stacks = c->full_stacks, .run = src->run, .next_run = rp_source_next_run(src),
                     .checkpoint = from && from->text[0] ? from->text : NULL,
                     .checkpoint_path = from && from->path[0] ? from->path : NULL,
                     .checkpoint_seq = from ? from->seq : 0};
    rp_output_print(&out, r);
    rp_verdict v;
    rp_output_verdict(&out, r, &v);
    return fflush(stdout) ? RP_EXIT_USAGE : v.status;
}

/* Commands with options of their own. */
static const struct { const char *name; int (*run)(int argc, char **argv); } own_commands[] = {
    {"report", cmd_report}, {"export", cmd_export}, {"import", cmd_import},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; argc > 1 && i < sizeof own_commands / sizeof *own_commands; i++)
        if (!strcmp(argv[1], own_commands[i].name))
            return own_commands[i].run(argc - 1, argv + 1);
    cli c;
    int parsed = parse_args(&c, argc, argv);
    if (parsed < 0) {
        if (parsed == -1)
            usage(stderr);
        return RP_EXIT_USAGE;
    }
    if (c.out_path && same_file(c.out_path, c.log)) {
        fprintf(stderr, "trace-replay: minimize: -o %s is the log being minimized; write the smaller log "
                        "elsewhere\n", c.out_path);
        return RP_EXIT_USAGE;
    }
    if (c.follow) {
        rp_check_follow f = {.log = c.log, .pid = c.pid,
                             .on_violation = c.on_violation < 0 ? RP_ON_VIOLATION_REPORT : c.on_violation,
                             .json = c.json, .model_name = c.model_name, .debug_dirs = c.debug_dirs,
                             .ndebug = c.ndebug, .model_options = c.model_options,
                             .nmodel_options = c.nmodel_options, .full_stacks = c.full_stacks, .o = c.o};
        return rp_check_follow_run(&f);
    }
    rp_source src;
    char err[512], label[64];
    snprintf(label, sizeof label, "trace-replay %s", c.command);
    if (rp_source_open(&src, c.log, label, c.run, err, sizeof err) < 0) {
        fprintf(stderr, "trace-replay: %s\n", err);
        return RP_EXIT_USAGE;
    }
    c.o.pool_name = rp_source_pool_name;
    c.o.pool_name_ctx = &src;
    /* Stacks for the models (where a collection ran) and for the output. */
    rn_stacks *stacks = rn_stacks_new(src.reader, c.debug_dirs, c.ndebug);
    rp_model_inputs mi;
    rp_model_inputs_init(&mi, stacks, &src, NULL, c.model_options, c.nmodel_options);
    rp_model_inputs_attach(&mi, &c.o);
    c.o.keep_going = !strcmp(c.command, "stats");
    c.o.series = c.o.keep_going;
    int rc;
    if (!strcmp(c.command, "minimize")) {
        rp_minimized m;
        /* A cut log goes on from its checkpoint, a reproducer from its own
         * state: a first replay finds out which, as check would. */
        started from = {0};
        rp_options first = c.o;
        first.keep_going = 0;
        first.series = 0;
        rp_replay_free(run_replay(&first, &src, 0, &from));
        if (from.text[0])
            fprintf(stderr, "minimize: %s\n", from.text);
        if (src.rewind(&src) < 0) {
            snprintf(err, sizeof err, "%s: the log no longer reads", c.log);
            rc = -1;
        } else {
            rc = rp_minimize(&c.o, &src, from.ckpt.state ? &from.ckpt : NULL, c.max_replays, c.out_path, &m, err,
                             sizeof err);
        }
        rp_checkpoint_free(&from.ckpt);
        if (rc == 1) {
            char shown[512];
            fprintf(stderr, "minimize: %s kept in %zu of %zu events (%zu replays), written to %s\n", m.invariant,
                    m.kept, m.events, m.replays, rn_text(shown, sizeof shown, c.out_path));
            if (m.diverged_before)
                printf("verdict: VIOLATION %s (still broken by the %zu-event log written to %s; but there the model "
                       "leaves the log %" PRIu64 " time(s) before it, where the original's followed it: the small log "
                       "shows how the model breaks, which may not be how the pool did)\n", m.invariant, m.kept, shown,
                       m.diverged_before);
            else
                printf("verdict: VIOLATION %s (still broken by the %zu-event log written to %s)\n", m.invariant,
                       m.kept, shown);
        } else if (rc == 0) {
            printf("verdict: clean (the log breaks no invariant: nothing to minimize)\n");
        } else {
            fprintf(stderr, "trace-replay: %s\n", err);
        }
        rc = rc == 1 ? RP_EXIT_VIOLATION : rc == 0 ? RP_EXIT_CLEAN : RP_EXIT_USAGE;
    } else if (!strcmp(c.command, "explore")) {
        rp_explore_result x;
        rp_replay *r = rp_explore(&c.o, &src, &x);
        if (!r) {
            fprintf(stderr, "trace-replay: %s: cannot read the log a second time\n", c.log);
            rp_model_inputs_free(&mi);
            rn_stacks_free(stacks);
            rp_source_close(&src);
            return RP_EXIT_USAGE;
        }
        rc = print(&c, &src, stacks, r, &x, NULL);
        rp_replay_free(r);
    } else {
        started from = {0};
        rp_replay *r = run_replay(&c.o, &src, c.restart_at, &from);
        rc = r ? print(&c, &src, stacks, r, NULL, &from) : RP_EXIT_USAGE;
        rp_replay_free(r);
        rp_checkpoint_free(&from.ckpt);
    }
    rp_model_inputs_free(&mi);
    rn_stacks_free(stacks);
    rp_source_close(&src);
    return rc;
}
