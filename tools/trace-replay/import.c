/* import.c - `trace-replay import`: the command around rp_import. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "import_json.h"

static const char usage[] =
    "usage: trace-replay import [-o OUT] [JSONL|-]\n"
    "  Write a log from JSON lines in trace-dump --json's schema (its inverse).\n"
    "  One object per line, by \"kind\": \"header\" (first, optional); \"pool\"\n"
    "  {pool, name}; \"thread\" {tid, name, py_name}; \"info\" {key, value}; \"module\"\n"
    "  {id, path, base, build_id, segments: [{vaddr, memsz, flags}]};\n"
    "  \"module_unload\" {id}; and events\n"
    "  {seq, tid, t_ns, kind, parent, fields by trace-dump's names,\n"
    "  native_stack: [{ip, module, offset} or ip: numbers or \"0x...\"],\n"
    "  py_stack: [{file, line,\n"
    "  function}]}.  Sequence numbers are renumbered from 1.\n"
    "  -o OUT   the log to write (default: import.tlog)\n";

int cmd_import(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *out = "import.tlog";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (argc - optind > 1) {
        fputs(usage, stderr);
        return 2;
    }
    const char *src = optind < argc ? argv[optind] : "-";
    FILE *in = strcmp(src, "-") ? fopen(src, "r") : stdin;
    if (!in) {
        fprintf(stderr, "trace-replay import: %s: %s\n", src, strerror(errno));
        return 2;
    }
    rp_import_result res = {0};
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = -1;
    if (fd < 0)
        snprintf(res.err, sizeof res.err, "%s: %s", out, strerror(errno));
    else
        rc = rp_import(in, fd, &res);
    if (fd >= 0 && close(fd) && !rc) {
        snprintf(res.err, sizeof res.err, "%s: %s", out, strerror(errno));
        rc = -1;
    }
    if (rc)
        fprintf(stderr, "trace-replay import: %s:%lu: %s\n", src, res.line, res.err);
    if (in != stdin)
        fclose(in);
    return rc ? 2 : 0;
}
