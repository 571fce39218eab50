/* report.c - `trace-replay report`: read a log once, print what it says. */
#include "commands.h"
#include "report.h"
#include "report_tree.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEBUG_DIRS 16

static const char usage[] =
    "usage: trace-replay report LOG [--json] [--html OUT] [--model NAME] [--full-stacks] [--debug-dir DIR]\n"
    "       trace-replay report LOG LOG... | DIR...  [same options]\n"
    "  A summary of a log: the run, memory over time, the top allocation sites,\n"
    "  every model-free violation, double initialisations, and the memory that\n"
    "  only garbage collections gave back; its last line is the verdict.\n"
    "  Several logs, or a directory (the logs in it), are one process tree: the\n"
    "  processes linked by pid and parent pid (an exec'd image under the image\n"
    "  that exec'd it), each with its findings and verdict, the totals, and for\n"
    "  a distributed job (INFO rank) the ranks by peak memory and those that\n"
    "  differ from the others (a peak over 1.5x or under 1/1.5 of the ranks'\n"
    "  median and 16 MiB away, or a verdict worse than most).  Its verdict is\n"
    "  the worst process's (violation, inconclusive, clean) and names it.\n"
    "  --json           print the report as one JSON object (docs/report-json.md)\n"
    "  --html OUT       also write a self-contained HTML page (chart, flame graph)\n"
    "  --model NAME     the pool model to replay, as check does (default auto: by\n"
    "                   each pool's name; none: model-free checks only)\n"
    "  --full-stacks    every native frame (default: interpreter, start-up and\n"
    "                   tracer frames folded)\n"
    "  --debug-dir DIR  more places to find binaries and debug files (repeatable)\n"
    "  --run N          the N-th log of a file that holds several (logs joined with cat;\n"
    "                   one log only: over several logs, every log of each file is read)\n"
    "exit status: the verdict's, as check's: 0 clean, 1 a violation (a pool model's\n"
    "  or a model-free check's), 2 usage error or unreadable log, 3 inconclusive\n"
    "  (no violation, but the model diverged from the log on more than 1% of its\n"
    "  answers); over several logs the worst process's, or 2 when a log could not\n"
    "  be read and no process had a violation\n";

static int write_html(const rpt *r, rn_stacks *st, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "trace-replay report: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = rpt_print_html(r, st, f);
    if (fclose(f) || rc) {
        fprintf(stderr, "trace-replay report: %s: write failed\n", path);
        return -1;
    }
    return 0;
}

static int write_tree_html(const rpt_tree *t, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "trace-replay report: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = rpt_tree_print_html(t, f);
    if (fclose(f) || rc) {
        fprintf(stderr, "trace-replay report: %s: write failed\n", path);
        return -1;
    }
    return 0;
}

/* Several logs, or a directory of them: one process tree. */
static int report_tree(char *const *paths, int n, const rpt_options *o, int full, int json, const char *html)
{
    rpt_tree t;
    if (rpt_tree_read(&t, paths, n, o, full, json || html)) {
        rpt_tree_free(&t);
        return RP_EXIT_USAGE;
    }
    int rc = json ? rpt_tree_print_json(&t, stdout) : rpt_tree_print_text(&t, stdout);
    if (!rc && html)
        rc = write_tree_html(&t, html);
    if (fflush(stdout))
        rc = -1;
    int status = rpt_tree_status(&t);
    rpt_tree_free(&t);
    return rc ? RP_EXIT_USAGE : status;
}

static int is_dir(const char *path)
{
    struct stat st;
    return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"html", required_argument, NULL, 'H'},
        {"debug-dir", required_argument, NULL, 'd'},
        {"model", required_argument, NULL, 'm'},
        {"full-stacks", no_argument, NULL, 'F'},
        {"run", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *html = NULL, *model = "auto", *dirs[MAX_DEBUG_DIRS];
    int json = 0, ndirs = 0, full = 0, run = 1, run_given = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'H': html = optarg; break;
        case 'm': model = strcmp(optarg, "none") ? optarg : NULL; break;
        case 'F': full = 1; break;
        case 'r': run = atoi(optarg) > 0 ? atoi(optarg) : 1; run_given = 1; break;
        case 'd':
            if (ndirs < MAX_DEBUG_DIRS)
                dirs[ndirs++] = optarg;
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage, stderr);
        return 2;
    }
    rpt_options o = {.model = model, .debug_dirs = dirs, .ndebug_dirs = ndirs, .progress = "trace-replay report",
                     .run = run};
    int nlogs = argc - optind, dirs_given = 0;
    for (int i = optind; i < argc; i++)
        dirs_given |= is_dir(argv[i]);
    if (nlogs > 1 && !dirs_given)
        nlogs = rpt_same_logs(argv + optind, nlogs, "trace-replay report");
    if (nlogs > 1 || dirs_given) {
        if (run_given) {
            fprintf(stderr, "trace-replay report: --run picks one log of one file; over several logs every log "
                            "of each file is read\n");
            return 2;
        }
        return report_tree(argv + optind, nlogs, &o, full, json, html);
    }
    rpt r;
    char err[512];
    if (rpt_open(&r, argv[optind], &o, err, sizeof err)) {
        fprintf(stderr, "trace-replay report: %s: %s\n", argv[optind], err);
        rpt_free(&r);
        return 2;
    }
    rpt_read(&r, NULL);
    r.full_stacks = full;
    rn_stacks *st = r.stacks;
    int rc = json ? rpt_print_json(&r, st, stdout) : rpt_print_text(&r, st, stdout);
    if (!rc && html)
        rc = write_html(&r, st, html);
    if (fflush(stdout))
        rc = -1;
    rp_verdict v;
    rpt_verdict(&r, &v);
    rpt_free(&r);
    return rc ? RP_EXIT_USAGE : v.status;
}
