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
#include "ptrmap.h"
#include "replay.h"
#include "report.h"
#include "source.h"
#include "xalloc.h"

#define MAX_DEBUG_DIRS 16
#define MAX_MODEL_OPTIONS 32

typedef struct cli {
    const char *command, *log, *out_path, *model_name;
    rp_options o;
    int json;
    const char *debug_dirs[MAX_DEBUG_DIRS];
    int ndebug;
    const char *model_options[MAX_MODEL_OPTIONS];   /* KEY=VALUE */
    int nmodel_options;
    rp_source *src;
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
            "  --model-option KEY=VALUE  an option the run used, over the log's (repeatable;\n"
            "                   e.g. bfc.memory_limit=16G, torch.alloc_conf=expandable_segments:True,\n"
            "                   cupy_version=5.2.0; see docs/models.md)\n"
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
        {"model-option", required_argument, NULL, 'O'},
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
        case 'O':
            if (c->nmodel_options == MAX_MODEL_OPTIONS || !strchr(optarg, '=')) {
                fprintf(stderr, "trace-replay: --model-option wants KEY=VALUE (at most %d)\n", MAX_MODEL_OPTIONS);
                return -1;
            }
            c->model_options[c->nmodel_options++] = optarg;
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

/* The options the run used: --model-option first, then the log's newest
 * INFO record of that key read so far. */
static const char *setting(void *ctx, const char *key)
{
    const cli *c = ctx;
    size_t n = strlen(key);
    for (int i = c->nmodel_options; i-- > 0;)
        if (!strncmp(c->model_options[i], key, n) && c->model_options[i][n] == '=')
            return c->model_options[i] + n + 1;
    const tf_reader *r = c->src ? c->src->reader : NULL;
    for (uint32_t i = r ? tf_reader_info_count(r) : 0; i-- > 0;) {
        const char *k, *v;
        if (tf_reader_info(r, i, &k, &v) && k && !strcmp(k, key))
            return v;
    }
    return NULL;
}

/* Stacks for the models (where a collection ran) and for the report. */
typedef struct stack_src {
    rp_stacks *stacks;
    rp_source *src;
    /* Function names of the stacks asked for, each once: a replay places
     * collections again and again (minimize replays the log many times). */
    rp_ptrmap names_at;          /* stack id -> first << 8 | count */
    const char **names;
    size_t nnames, capnames;
} stack_src;

static int stack_has(void *ctx, uint32_t id, const char *key)
{
    stack_src *ss = ctx;
    rp_stacks_use_reader(ss->stacks, ss->src->reader);  /* explore reopens the log */
    return rp_stacks_has_function(ss->stacks, id, key);
}

#define NAMED_FRAMES 64

static uint32_t stack_functions(void *ctx, uint32_t id, const char **names, uint32_t max)
{
    stack_src *ss = ctx;
    uint64_t *at = rp_ptrmap_get(&ss->names_at, id);
    if (!at) {
        rp_native_frame f[NAMED_FRAMES];
        rp_stacks_use_reader(ss->stacks, ss->src->reader);
        uint32_t n = rp_stacks_native(ss->stacks, id, f, NAMED_FRAMES);
        rp_grow(&ss->names, &ss->capnames, ss->nnames + n, sizeof *ss->names);
        for (uint32_t i = 0; i < n; i++)
            ss->names[ss->nnames + i] = f[i].function;
        rp_ptrmap_put(&ss->names_at, id, (uint64_t)ss->nnames << 8 | n);
        ss->nnames += n;
        at = rp_ptrmap_get(&ss->names_at, id);
    }
    uint32_t n = (uint32_t)(*at & 0xff), first = (uint32_t)(*at >> 8);
    if (n > max)
        n = max;
    memcpy(names, ss->names + first, n * sizeof *names);
    return n;
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
    c.src = &src;
    c.o.setting = setting;
    c.o.setting_ctx = &c;
    stack_src ss = {.stacks = rp_stacks_new(src.reader, c.debug_dirs, c.ndebug), .src = &src};
    rp_ptrmap_init(&ss.names_at);
    c.o.stack_has = stack_has;
    c.o.stack_functions = stack_functions;
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
            rp_ptrmap_free(&ss.names_at);
            free(ss.names);
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
    rp_ptrmap_free(&ss.names_at);
    free(ss.names);
    rp_source_close(&src);
    return rc;
}
