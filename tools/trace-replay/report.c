/* report.c - `trace-replay report`: read a log once, print what it says. */
#include "commands.h"
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

#define MAX_DEBUG_DIRS 16

static const char usage[] =
    "usage: trace-replay report LOG [--json] [--html OUT] [--model NAME] [--debug-dir DIR]\n"
    "  A summary of a log: the run, memory over time, the top allocation sites,\n"
    "  every model-free violation, double initialisations, and the memory that\n"
    "  only garbage collections gave back.\n"
    "  --json           print the report as one JSON object (docs/report-json.md)\n"
    "  --html OUT       also write a self-contained HTML page (chart, flame graph)\n"
    "  --model NAME     the pool model to replay, as check does (default auto: by\n"
    "                   each pool's name; none: model-free checks only)\n"
    "  --debug-dir DIR  more places to find binaries and debug files (repeatable)\n";

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

int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"html", required_argument, NULL, 'H'},
        {"debug-dir", required_argument, NULL, 'd'},
        {"model", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *html = NULL, *model = "auto", *dirs[MAX_DEBUG_DIRS];
    int json = 0, ndirs = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'H': html = optarg; break;
        case 'm': model = strcmp(optarg, "none") ? optarg : NULL; break;
        case 'd':
            if (ndirs < MAX_DEBUG_DIRS)
                dirs[ndirs++] = optarg;
            break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fputs(usage, stderr);
        return 2;
    }
    rpt r;
    char err[512];
    rpt_options o = {.model = model, .debug_dirs = dirs, .ndebug_dirs = ndirs, .progress = "trace-replay report"};
    if (rpt_open(&r, argv[optind], &o, err, sizeof err)) {
        fprintf(stderr, "trace-replay report: %s: %s\n", argv[optind], err);
        rpt_free(&r);
        return 2;
    }
    rpt_read(&r, NULL);
    rn_stacks *st = r.stacks;
    int rc = json ? rpt_print_json(&r, st, stdout) : rpt_print_text(&r, st, stdout);
    if (!rc && html)
        rc = write_html(&r, st, html);
    if (fflush(stdout))
        rc = -1;
    rpt_free(&r);
    return rc ? 2 : 0;
}
