/*
 * main.c - trace-replay: the command line.
 *
 *     trace-replay check|stats|explore LOG [options]
 *     trace-replay minimize LOG -o OUT [options]
 *
 * Exit status: 0 clean, 1 a violation was found (minimize: the smaller log
 * was written and still breaks it), 2 usage error or unreadable log.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore.h"
#include "export_perfetto.h"
#include "import_json.h"
#include "minimize.h"
#include "output.h"
#include "replay.h"
#include "report.h"
#include "source.h"

#define MAX_DEBUG_DIRS 16

typedef struct cli {
    const char *command, *log, *out_path, *model_name;
    rp_options o;
    int json;
    const char *debug_dirs[MAX_DEBUG_DIRS];
    int ndebug;
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
            "  export    --perfetto OUT: the log as Chrome trace-event JSON\n"
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
            "  --debug-dir DIR  more places to find binaries and debug files (repeatable)\n"
            "  -o OUT           minimize: where to write the smaller log\n"
            "exit status: 0 clean, 1 violation found, 2 usage error or unreadable log\n",
            "none");
}

static int parse_args(cli *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'}, {"pool", required_argument, NULL, 'p'},
        {"paranoid", no_argument, NULL, 'P'},    {"json", no_argument, NULL, 'j'},
        {"debug-dir", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    memset(c, 0, sizeof *c);
    c->o.model_auto = 1;
    c->model_name = "auto";
    while ((ch = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            c->model_name = optarg;
            c->o.model_auto = !strcmp(optarg, "auto");
            if (strcmp(optarg, "none") && !c->o.model_auto && !(c->o.model = rp_model_find(optarg))) {
                fprintf(stderr, "trace-replay: unknown model '%s'\n", optarg);
                return -1;
            }
            break;
        case 'p': c->o.pool = optarg; break;
        case 'P': c->o.paranoid = 1; break;
        case 'j': c->json = 1; break;
        case 'o': c->out_path = optarg; break;
        case 'd':
            if (c->ndebug == MAX_DEBUG_DIRS)
                return -1;
            c->debug_dirs[c->ndebug++] = optarg;
            break;
        case 'h': usage(stdout); exit(0);
        default: return -1;
        }
    }
    if (argc - optind != 2)
        return -1;
    c->command = argv[optind];
    c->log = argv[optind + 1];
    if (!strcmp(c->command, "minimize") && !c->out_path) {
        fprintf(stderr, "trace-replay: minimize needs -o OUT\n");
        return -1;
    }
    if (strcmp(c->command, "check") && strcmp(c->command, "stats") && strcmp(c->command, "explore") &&
        strcmp(c->command, "minimize")) {
        fprintf(stderr, "trace-replay: unknown command '%s'\n", c->command);
        return -1;
    }
    return 0;
}

static rp_replay *run_replay(const rp_options *o, rp_source *src)
{
    rp_replay *r = rp_replay_new(o);
    tf_event e;
    while (src->next(src, &e))
        if (rp_replay_event(r, &e))
            break;
    rp_replay_finish(r, rp_source_clean_end(src));
    return r;
}

/* Stacks for the models (where a collection ran) and for the report. */
typedef struct stack_src { rp_stacks *stacks; rp_source *src; } stack_src;

static int stack_has(void *ctx, uint32_t id, const char *key)
{
    stack_src *ss = ctx;
    rp_stacks_use_reader(ss->stacks, ss->src->reader);  /* explore reopens the log */
    return rp_stacks_has_function(ss->stacks, id, key);
}

static int print(const cli *c, rp_source *src, rp_stacks *st, const rp_replay *r, const rp_explore_result *x)
{
    rp_progress_done(&src->progress);   /* a replay that stopped early left it shown */
    rp_stacks_use_reader(st, src->reader);
    rp_output out = {stdout, c->json, c->command, c->model_name, src->reader, st,
                     rp_source_clean_end(src), tf_reader_damage(src->reader), !strcmp(c->command, "stats"), x};
    rp_output_print(&out, r);
    const rp_result *res = rp_replay_result(r);
    return res->violated || (x && x->found) ? 1 : 0;
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
    if (parse_args(&c, argc, argv) < 0) {
        usage(stderr);
        return 2;
    }
    rp_source src;
    char err[512];
    if (rp_source_open(&src, c.log, err, sizeof err) < 0) {
        fprintf(stderr, "trace-replay: %s\n", err);
        return 2;
    }
    c.o.pool_name = rp_source_pool_name;
    c.o.pool_name_ctx = &src;
    stack_src ss = {rp_stacks_new(src.reader, c.debug_dirs, c.ndebug), &src};
    c.o.stack_has = stack_has;
    c.o.stack_ctx = &ss;
    c.o.keep_going = !strcmp(c.command, "stats");
    c.o.series = c.o.keep_going;
    int rc;
    if (!strcmp(c.command, "minimize")) {
        rc = rp_minimize(&c.o, &src, c.out_path, stderr, err, sizeof err);
        if (rc != 1)
            fprintf(stderr, "trace-replay: %s\n", err);
    } else if (!strcmp(c.command, "explore")) {
        rp_explore_result x;
        rp_replay *r = rp_explore(&c.o, &src, &x);
        if (!r) {
            fprintf(stderr, "trace-replay: %s: cannot read the log a second time\n", c.log);
            rp_stacks_free(ss.stacks);
            rp_source_close(&src);
            return 2;
        }
        rc = print(&c, &src, ss.stacks, r, &x);
        rp_replay_free(r);
    } else {
        rp_replay *r = run_replay(&c.o, &src);
        rc = print(&c, &src, ss.stacks, r, NULL);
        rp_replay_free(r);
    }
    rp_stacks_free(ss.stacks);
    rp_source_close(&src);
    return rc;
}
