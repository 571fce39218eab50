/*
 * trace-dump - print an event log.
 *
 *   trace-dump [--json | --summary] [--debug-dir DIR]... FILE
 *
 * Default: the header, then one readable line per event.  --json: one JSON
 * object per line, the header first (FORMAT.md section 11, "trace-dump --json").
 * --summary: counts per kind, threads, time span, size, and how the log ends.
 * --debug-dir DIR (repeatable): where else to look for binaries and debug
 * files when --json symbolises native stacks (see render/symbolize.h).
 * Exit status: 0 a whole log, 1 a damaged one (what was readable is printed,
 * the damage goes to stderr), 2 a usage error or a file that is not a log.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dump.h"
#include "text.h"

enum mode { MODE_TEXT, MODE_JSON, MODE_SUMMARY };

/* ------------------------------------------------------------ text */

static void text_u(dump_ctx *d, const char *key, uint64_t v, int is_address)
{
    fprintf(d->out, is_address ? " %s=%#" PRIx64 : " %s=%" PRIu64, key, v);
}

static void text_i(dump_ctx *d, const char *key, int64_t v)
{
    fprintf(d->out, " %s=%" PRId64, key, v);
}

/* Quoted and escaped (text.h), so that every event stays on one line. */
static void text_s(dump_ctx *d, const char *key, const char *s, size_t n)
{
    if (!s) {
        fprintf(d->out, " %s=?", key);
        return;
    }
    char shown[4096];
    /* A quote would end the value early: escape it as well. */
    fprintf(d->out, " %s=\"", key);
    for (size_t i = 0; i < n;) {
        size_t q = i;
        while (q < n && s[q] != '"')
            q++;
        fputs(rn_text_n(shown, sizeof shown, s + i, q - i < 1000 ? q - i : 1000), d->out);
        i += q - i < 1000 ? q - i : 1000;
        if (i == q && q < n) {
            fputs("\\\"", d->out);
            i++;
        }
    }
    fputc('"', d->out);
}

static void text_u3(dump_ctx *d, const char *key, const uint64_t v[3])
{
    fprintf(d->out, " %s=%" PRIu64 "/%" PRIu64 "/%" PRIu64, key, v[0], v[1], v[2]);
}

static const dump_sink text_sink = { text_u, text_i, text_s, text_u3 };

static void text_header(dump_ctx *d)
{
    const tf_header *h = tf_reader_header(d->r);
    char a[1024], b[1024];
    fprintf(d->out, "trace log %u.%u: pid %u (parent %u) on %s\n", h->version_major,
            h->version_minor, h->pid, h->ppid, rn_text(a, sizeof a, h->hostname));
    fprintf(d->out, "  command: %s\n  exe: %s\n", rn_text(a, sizeof a, h->cmdline), rn_text(b, sizeof b, h->exe));
    fprintf(d->out, "  tracer: %s  settings: %s\n", rn_text(a, sizeof a, h->tracer_version),
            rn_text(b, sizeof b, h->settings));
    fprintf(d->out, "  python: %s  cuda runtime: %d  driver: %d\n", rn_text(a, sizeof a, h->python_version),
            h->cuda_runtime_version, h->cuda_driver_version);
    fprintf(d->out, "  started: %" PRIu64 ".%09" PRIu64 " (wall), %" PRIu64 " ns (monotonic)\n",
            h->wall_start_ns / 1000000000, h->wall_start_ns % 1000000000, h->mono_start_ns);
    if (h->max_bytes)
        fprintf(d->out, "  kept within %" PRIu64 " bytes (TRACE_MAX_BYTES): segments, read from segment %u%s\n",
                h->max_bytes, h->segment, h->segment ? " (the earlier ones were deleted)" : "");
}

/* The innermost Python frame, which usually says what the program was doing. */
static void text_py_frame(dump_ctx *d, uint32_t id)
{
    const tf_py_frame *frames;
    uint32_t n;
    if (!id || !tf_reader_py_stack(d->r, id, &frames, &n) || n == 0)
        return;
    const tf_py_code *code = tf_reader_py_code(d->r, frames[0].code);
    const char *file = code ? tf_reader_string(d->r, code->file, NULL) : NULL;
    const char *func = code ? tf_reader_string(d->r, code->function, NULL) : NULL;
    char a[512], b[256];
    fprintf(d->out, " at %s:%u %s", rn_text(a, sizeof a, file), frames[0].line, rn_text(b, sizeof b, func));
}

static void text_event(dump_ctx *d, const tf_event *e)
{
    const tf_header *h = tf_reader_header(d->r);
    double t = ((double)e->t_ns - (double)h->mono_start_ns) / 1e9;
    fprintf(d->out, "%" PRIu64 " %+.6fs tid %u %s", e->seq, t, e->tid, tf_kind_name(e->kind));
    dump_kind_fields(d, e, &text_sink);
    if (e->parent)
        fprintf(d->out, " parent=%" PRIu64, e->parent);
    if (e->native_stack)
        fprintf(d->out, " native#%u", e->native_stack);
    if (e->py_stack)
        fprintf(d->out, " py#%u", e->py_stack);
    text_py_frame(d, e->py_stack);
    fputc('\n', d->out);
}

static void text_info(dump_ctx *d)
{
    const char *key, *value;
    char a[256], b[1024];
    for (uint32_t i = 0; tf_reader_info(d->r, i, &key, &value); i++)
        fprintf(d->out, "info: %s=%s\n", rn_text(a, sizeof a, key), rn_text(b, sizeof b, value));
    /* FORMAT.md section 14: opaque to everyone but its producer. */
    uint64_t seq;
    const char *producer;
    const void *state;
    size_t len;
    if (tf_reader_checkpoint(d->r, &seq, &producer, &state, &len))
        fprintf(d->out, "checkpoint: the state of %s after event %llu (%zu bytes)\n", rn_text(a, sizeof a, producer),
                (unsigned long long)seq, len);
}

/* ------------------------------------------------------------ summary */

typedef struct summary {
    uint64_t per_kind[TF_KIND_MAX];
    uint64_t first_seq, first_t, last_t;
    uint32_t *tids;         /* distinct tids seen in events */
    size_t ntids, captids;
} summary;

static void summary_tid(summary *s, uint32_t tid)
{
    for (size_t i = s->ntids; i-- > 0;)
        if (s->tids[i] == tid)
            return;
    if (s->ntids == s->captids) {
        size_t cap = s->captids ? s->captids * 2 : 16;
        uint32_t *tids = realloc(s->tids, cap * sizeof *tids);
        if (!tids)
            return;
        s->tids = tids;
        s->captids = cap;
    }
    s->tids[s->ntids++] = tid;
}

static void summary_add(summary *s, const tf_event *e)
{
    if (!s->first_seq) {
        s->first_seq = e->seq;
        s->first_t = e->t_ns;
    }
    s->last_t = e->t_ns;
    s->per_kind[e->kind < TF_KIND_MAX ? e->kind : 0]++;
    summary_tid(s, e->tid);
}

static void summary_print(dump_ctx *d, summary *s, const char *path)
{
    FILE *f = d->out;
    const tf_read_status *st = tf_reader_status(d->r);
    fprintf(f, "events      %" PRIu64 " (seq %" PRIu64 "..%" PRIu64 ")\n", st->events,
            s->first_seq, st->last_seq);
    for (uint32_t k = 32; k < TF_KIND_MAX; k++)
        if (s->per_kind[k])
            fprintf(f, "  %-16s %" PRIu64 "\n", tf_kind_name(k), s->per_kind[k]);
    /* The first threads met, by name: a test suite's log may have
     * thousands, which one line would not show any better. */
    enum { THREADS_SHOWN = 16 };
    fprintf(f, "threads     %zu:", s->ntids);
    for (size_t i = 0; i < s->ntids && i < THREADS_SHOWN; i++) {
        const char *name = tf_reader_thread_name(d->r, s->tids[i]);
        const char *py_name = tf_reader_thread_py_name(d->r, s->tids[i]);
        char tname[128], pname[128];
        fprintf(f, "%s %u%s%s%s%s%s", i ? "," : "", s->tids[i], name ? " " : "",
                name ? rn_text(tname, sizeof tname, name) : "", *py_name ? " (" : "",
                *py_name ? rn_text(pname, sizeof pname, py_name) : "", *py_name ? ")" : "");
    }
    if (s->ntids > THREADS_SHOWN)
        fprintf(f, ", and %zu more", s->ntids - THREADS_SHOWN);
    fputc('\n', f);
    uint32_t pool;
    const char *name;
    char shown[256];
    for (uint32_t i = 0; tf_reader_pool_at(d->r, i, &pool, &name); i++)
        fprintf(f, "pool        %u %s\n", pool, rn_text(shown, sizeof shown, name));
    fprintf(f, "time span   %.6f s\n", (double)(s->last_t - s->first_t) / 1e9);
    struct stat sb;
    if (stat(path, &sb) == 0)
        fprintf(f, "file        %lld bytes, %.2f bytes/event\n", (long long)sb.st_size,
                st->events ? (double)sb.st_size / (double)st->events : 0.0);
    fprintf(f, "frames      %" PRIu64 " (%" PRIu64 " corrupt", st->frames, st->corrupt_frames);
    if (st->column_blocks)
        fprintf(f, ", %" PRIu64 " column blocks", st->column_blocks);
    fprintf(f, ")\n");
    fprintf(f, "end         %s\n", st->clean_end ? "clean (END record read)" : "no END record");
    const char *damage = tf_reader_damage(d->r);
    fprintf(f, "damage      %s\n", damage ? damage : "none");
    text_info(d);
    free(s->tids);
}

/* ------------------------------------------------------------ main */

static int usage(FILE *f, int status)
{
    fputs("usage: trace-dump [--json | --summary] [--kinds K,...] [--debug-dir DIR]... FILE\n"
          "  (default) the header, then one readable line per event; strings from the\n"
          "            log are escaped (\\xNN for control characters and bytes that\n"
          "            are not UTF-8)\n"
          "  --json    one JSON object per line: the header, definitions, events with\n"
          "            their stacks symbolised (format/FORMAT.md section 11)\n"
          "  --summary counts per kind, threads, time span, size, how the log ends\n"
          "  --kinds K,...  only the events of these kinds (cuda_alloc,gc_start,...):\n"
          "            printed, their stacks resolved, counted; under TRACE_PY_ALLOCS\n"
          "            most events are py_alloc, whose stacks --json need not render\n"
          "  --debug-dir DIR  more places to find binaries and debug files (repeatable)\n"
          "  --version the version of trace-dump and of the log format it reads\n"
          "exit status: 0 the log is whole, 1 it is damaged (what was readable is\n"
          "  printed, the damage goes to stderr), 2 usage error or not a log\n", f);
    return status;
}

/* --kinds a,b,c: the events printed.  -1 (said) for a name no kind has. */
static int parse_kinds(dump_ctx *d, const char *list)
{
    d->some_kinds = 1;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        uint32_t k = 0;
        for (; k < 256; k++) {
            const char *name = tf_kind_name(k);
            if (k >= 32 && name && strlen(name) == n && !strncmp(name, p, n))
                break;
        }
        if (k == 256) {
            fprintf(stderr, "trace-dump: --kinds: no event kind is called '%.*s'; the kinds:", (int)n, p);
            for (k = 32; k < 256; k++)
                if (tf_kind_name(k))
                    fprintf(stderr, " %s", tf_kind_name(k));
            fputc('\n', stderr);
            return -1;
        }
        d->kinds[k] = 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* One log of the file: its header, events, and how it ends. */
static int run_one(dump_ctx *d, enum mode mode, const char *path, int nrun)
{
    summary s = { 0 };
    tf_event e;
    if (mode == MODE_JSON)
        dump_json_header(d);
    else if (mode == MODE_TEXT)
        text_header(d);
    while (tf_reader_next(d->r, &e)) {
        if (d->some_kinds && !d->kinds[e.kind & 0xff])
            continue;
        if (mode == MODE_JSON)
            dump_json_event(d, &e);
        else if (mode == MODE_TEXT)
            text_event(d, &e);
        else
            summary_add(&s, &e);
    }
    if (mode == MODE_JSON)
        dump_json_definitions(d);
    else if (mode == MODE_SUMMARY)
        summary_print(d, &s, path);
    else if (mode == MODE_TEXT)
        text_info(d);
    fflush(d->out);
    const char *damage = tf_reader_damage(d->r);
    if (damage)
        fprintf(stderr, "trace-dump: %s%s: %s\n", path, nrun > 1 ? " (a later log in it)" : "", damage);
    return damage ? 1 : 0;
}

/* Logs joined with cat are runs one after another: each is printed whole,
 * after a line that says where it starts (JSON: its header line). */
static int run(dump_ctx *d, enum mode mode, const char *path)
{
    int status = 0, nrun = 1;
    for (;;) {
        status |= run_one(d, mode, path, nrun);
        uint64_t at = tf_reader_status(d->r)->next_run_offset;
        if (!at || !tf_reader_next_run(d->r))
            return status;
        nrun++;
        if (mode != MODE_JSON)
            fprintf(d->out, "\n--- log %d of this file: another log joined after the one above, at byte %llu ---\n",
                    nrun, (unsigned long long)at);
        if (d->stacks)
            rn_stacks_use_reader(d->stacks, NULL), rn_stacks_use_reader(d->stacks, d->r);
        d->json_pools = d->json_threads = d->json_infos = d->json_modules = d->json_unloads = 0;
        d->json_renames = 0;
    }
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "json", no_argument, NULL, 'j' },
        { "summary", no_argument, NULL, 's' },
        { "debug-dir", required_argument, NULL, 'd' },
        { "kinds", required_argument, NULL, 'k' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    enum mode mode = MODE_TEXT;
    static dump_ctx d;
    const char **dirs = calloc((size_t)argc, sizeof *dirs);
    int ndirs = 0, c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'j': mode = MODE_JSON; break;
        case 's': mode = MODE_SUMMARY; break;
        case 'd': dirs[ndirs++] = optarg; break;
        case 'k':
            if (parse_kinds(&d, optarg) < 0) {
                free(dirs);
                return 2;
            }
            break;
        case 'h': free(dirs); return usage(stdout, 0);
        case 'V':
            printf("trace-dump %s (log format %d.%d)\n", TRACE_VERSION, TF_VERSION_MAJOR, TF_VERSION_MINOR);
            free(dirs);
            return 0;
        default: free(dirs); return usage(stderr, 2);
        }
    }
    if (optind != argc - 1) {
        free(dirs);
        return usage(stderr, 2);
    }
    const char *path = argv[optind];
    char err[512];
    d.out = stdout;
    d.r = tf_reader_open(path, err, sizeof err);
    if (!d.r) {
        fprintf(stderr, "trace-dump: %s: %s\n", path, err);
        free(dirs);
        return 2;
    }
    d.stacks = mode == MODE_JSON ? rn_stacks_new(d.r, dirs, ndirs) : NULL;
    rn_json_init(&d.j, d.out);
    int status = run(&d, mode, path);
    if (rn_json_close(&d.j))
        status = 2;
    rn_stacks_free(d.stacks);
    tf_reader_close(d.r);
    free(dirs);
    return status;
}
