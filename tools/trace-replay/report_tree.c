/*
 * report_tree.c - several logs read as one process tree (report_tree.h):
 * reading, linking, ranks, the verdict.
 */
#include "report_tree.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xalloc.h"

static char *dup_or_null(const char *s)
{
    return s ? rp_xstrdup(s) : NULL;
}

/* The paths a directory stands for: its regular files that start as a log
 * does (the zstd magic: FORMAT.md), by name.  Other files (the HTML of an
 * earlier report, a script) are not logs and are passed over. */
static int starts_as_log(const char *path)
{
    static const unsigned char magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    unsigned char b[4];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(b, 1, 4, f);
    fclose(f);
    return n == 4 && !memcmp(b, magic, 4);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct names { char **v; uint32_t n, cap; } names;

static void names_add(names *l, char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = rp_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = s;
}

/* A later segment of a log kept within TRACE_MAX_BYTES (NAME.segK.EXT,
 * FORMAT.md section 13) is read through the log's first file, which is
 * always kept beside it: not a log of its own. */
static int later_segment(const names *found, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (uint32_t i = 0; i < found->n; i++)
        if (found->v[i] != path && tf_segment_number(base, found->v[i]))
            return 1;
    return 0;
}

static int list_dir(const char *dir, names *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    names found = {0};
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t nlen = strlen(e->d_name);
        /* Dot files, and the checkpoints check --follow keeps beside a
         * log's segments (replay/checkpoint.h): they are not logs. */
        if (e->d_name[0] == '.' || (nlen > 5 && !strcmp(e->d_name + nlen - 5, ".ckpt")))
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *p = rp_xmalloc(len);
        snprintf(p, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
        struct stat st;
        if (!stat(p, &st) && S_ISREG(st.st_mode) && starts_as_log(p))
            names_add(&found, p);
        else
            free(p);
    }
    closedir(d);
    if (found.n)
        qsort(found.v, found.n, sizeof *found.v, by_name);
    unsigned char *later = rp_xcalloc(found.n ? found.n : 1, 1);
    for (uint32_t i = 0; i < found.n; i++)
        later[i] = (unsigned char)later_segment(&found, found.v[i]);
    for (uint32_t i = 0; i < found.n; i++) {
        if (later[i])
            free(found.v[i]);
        else
            names_add(out, found.v[i]);
    }
    free(later);
    free(found.v);
    return 0;
}

/* Which log a file is, as a key two names of one log share: the real path
 * of the log's first file (a later segment is read through it, FORMAT.md
 * section 13), else of the file itself.  A shell's `trace-1234*.tlog` names
 * a log once per segment, and a directory and a file in it name one twice:
 * each was reported as a process of its own. */
static char *log_key(const char *path)
{
    char err[256];
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    const char *first = r ? tf_reader_log_path(r) : NULL;
    char *key = realpath(first ? first : path, NULL);
    if (!key)
        key = realpath(path, NULL);
    tf_reader_close(r);
    return key ? key : rp_xstrdup(path);
}

int rpt_same_logs(char **paths, int n, const char *prog)
{
    char **keys = rp_xcalloc(n ? (size_t)n : 1, sizeof *keys);
    char **dropped = rp_xcalloc(n ? (size_t)n : 1, sizeof *dropped);
    int kept = 0, ndropped = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        char *key = stat(paths[i], &st) == 0 && S_ISREG(st.st_mode) ? log_key(paths[i]) : NULL;
        int same = -1;
        for (int j = 0; key && j < kept && same < 0; j++)
            if (keys[j] && !strcmp(keys[j], key))
                same = j;
        if (same < 0) {
            keys[kept] = key;
            paths[kept++] = paths[i];
            continue;
        }
        /* The log's first file is the name it is known by: it stays. */
        char *real = realpath(paths[i], NULL), *kept_real = realpath(paths[same], NULL);
        if (real && !strcmp(real, key) && !(kept_real && !strcmp(kept_real, key))) {
            char *t = paths[same];
            paths[same] = paths[i];
            paths[i] = t;
        }
        free(real);
        free(kept_real);
        char a[512], b[512];
        fprintf(stderr, "%s: %s is the same log as %s: read once\n", prog, rn_text(a, sizeof a, paths[i]),
                rn_text(b, sizeof b, paths[same]));
        dropped[ndropped++] = paths[i];
        free(key);
    }
    if (ndropped)
        memcpy(paths + kept, dropped, (size_t)ndropped * sizeof *paths);
    for (int i = 0; i < kept; i++)
        free(keys[i]);
    free(keys);
    free(dropped);
    return kept;
}

static void add_bad(rpt_tree *t, const char *path, const char *error)
{
    t->bad = rp_xrealloc(t->bad, (t->nbad + 1) * sizeof *t->bad);
    t->bad[t->nbad++] = (rpt_unreadable){rp_xstrdup(path), rp_xstrdup(error)};
}

/* What one of the single report's printers writes, as a string. */
static char *capture_text(const rpt *r, int violation)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return rp_xstrdup("");
    if (violation)
        rpt_print_verdict_violation(r, r->stacks, m);
    else
        rpt_print_findings(r, m);
    fclose(m);
    return text ? text : rp_xstrdup("");
}

/* Read one log of a file; its run number of the next log in the same file,
 * or 0. */
static int read_one(rpt_tree *t, const char *path, int run, const rpt_options *base, int full_stacks)
{
    rpt r;
    char err[512];
    rpt_options o = *base;
    o.run = run;
    if (rpt_open(&r, path, &o, err, sizeof err)) {
        add_bad(t, path, err);
        rpt_free(&r);
        return 0;
    }
    rpt_read(&r, NULL);
    r.full_stacks = full_stacks;
    t->procs = rp_xrealloc(t->procs, (t->nprocs + 1) * sizeof *t->procs);
    rpt_proc *p = &t->procs[t->nprocs++];
    memset(p, 0, sizeof *p);
    const tf_header *h = tf_reader_header(r.reader);
    p->path = rp_xstrdup(path);
    p->run = r.run;
    p->pid = h->pid;
    p->ppid = h->ppid;
    p->hostname = rp_xstrdup(h->hostname ? h->hostname : "");
    p->cmdline = dup_or_null(h->cmdline);
    p->exe = dup_or_null(h->exe);
    for (uint32_t i = 0; i < tf_reader_info_count(r.reader); i++) {
        const char *key, *value;
        if (!tf_reader_info(r.reader, i, &key, &value))
            continue;
        char **slot = !strcmp(key, "rank") ? &p->rank : !strcmp(key, "ending") ? &p->ending : NULL;
        if (slot && *value) {
            free(*slot);
            *slot = rp_xstrdup(value);
        }
    }
    p->wall_start_ns = h->wall_start_ns;
    p->mono_start_ns = h->mono_start_ns ? h->mono_start_ns : r.t_first;
    p->t_first = r.t_first;
    p->t_last = r.t_last;
    p->clean_end = r.status->clean_end;
    p->damage = dup_or_null(r.damage);
    p->no_end_only = p->damage && !r.status->clean_end && !r.status->corrupt_frames && !r.status->truncated &&
                     !r.status->gaps && !r.status->lost_events && !r.status->seq_gaps;
    p->has_device = rpt_has_device(&r);
    p->host_watched = rpt_host_watched(&r);
    p->events = r.events;
    p->threads = r.nthreads;
    p->peak[0] = r.peak_reserved.bytes;
    p->peak[1] = r.peak_allocated.bytes;
    p->peak[2] = r.peak_host.bytes;
    p->gc_dev_bytes = r.gc_dev_bytes;
    p->gc_host_bytes = r.gc_host_bytes;
    for (uint32_t i = 0; i < r.ndinits; i++)
        p->double_inits += r.dinits[i].count;
    for (int g = 0; g < 3; g++)
        p->collections += r.gc[g].collections;
    p->violations = r.total_violations;
    if (r.model) {
        p->model_violated = r.model->violated && r.model->by_model;
        p->model_ops = r.model->ops;
        p->model_diverged = r.model->diverged;
    }
    rpt_verdict(&r, &p->verdict);
    p->findings = capture_text(&r, 0);
    p->violation = capture_text(&r, 1);
    if (t->parts) {
        p->json_off = ftell(t->parts);
        rpt_print_json(&r, r.stacks, t->parts);
        p->json_len = (size_t)(ftell(t->parts) - p->json_off);
    }
    /* The points move here (rpt_free leaves them), cut to those in use. */
    p->series = r.series;
    p->series.p = rp_xrealloc(p->series.p, (p->series.n ? p->series.n : 1) * sizeof *p->series.p);
    r.series.p = NULL;
    int next = r.status->next_run_offset ? r.run + 1 : 0;
    rpt_free(&r);
    return next;
}

/* ---- the tree ---- */

static int same_host(const rpt_proc *a, const rpt_proc *b)
{
    return !strcmp(a->hostname, b->hostname);
}

/* a started before b: by the monotonic clock (one clock for every process
 * of a host), the order of the arguments breaking ties so that no two
 * processes can each be the other's parent. */
static int before(const rpt_tree *t, int a, int b)
{
    const rpt_proc *pa = &t->procs[a], *pb = &t->procs[b];
    return pa->mono_start_ns < pb->mono_start_ns || (pa->mono_start_ns == pb->mono_start_ns && a < b);
}

/* The log L's parent: the image of the same pid that exec'd it (the latest
 * earlier image of that pid whose ending is an exec), else the image of its
 * ppid that was running when L started (the latest one started before L: a
 * pid is reused only after its process is gone), else none. */
static void link_parent(rpt_tree *t, int i)
{
    rpt_proc *p = &t->procs[i];
    int exec_of = -1, forked_by = -1;
    for (uint32_t k = 0; k < t->nprocs; k++) {
        const rpt_proc *q = &t->procs[k];
        if ((int)k == i || !same_host(p, q) || !before(t, (int)k, i))
            continue;
        if (q->pid == p->pid && q->ending && !strncmp(q->ending, "exec", 4) &&
            (exec_of < 0 || before(t, exec_of, (int)k)))
            exec_of = (int)k;
        if (q->pid == p->ppid && p->ppid && (forked_by < 0 || before(t, forked_by, (int)k)))
            forked_by = (int)k;
    }
    p->parent = exec_of >= 0 ? exec_of : forked_by;
    p->relation = exec_of >= 0 ? 'e' : forked_by >= 0 ? 'c' : 'r';
}

static const rpt_tree *sort_tree;

static int by_start(const void *a, const void *b)
{
    const rpt_proc *pa = &sort_tree->procs[*(const int *)a], *pb = &sort_tree->procs[*(const int *)b];
    if (pa->wall_start_ns != pb->wall_start_ns)
        return pa->wall_start_ns < pb->wall_start_ns ? -1 : 1;
    return before(sort_tree, *(const int *)a, *(const int *)b) ? -1 : 1;
}

static void visit(rpt_tree *t, int i, int depth, uint32_t *n)
{
    t->procs[i].depth = depth;
    t->order[(*n)++] = i;
    for (uint32_t k = 0; k < t->procs[i].nkids; k++)
        visit(t, t->procs[i].kids[k], depth + 1, n);
}

static void link_tree(rpt_tree *t)
{
    for (uint32_t i = 0; i < t->nprocs; i++)
        link_parent(t, (int)i);
    /* Children in order of start: a root's are listed under it, roots (and
     * their trees) in order of start too. */
    int *all = rp_xmalloc((t->nprocs + 1) * sizeof *all);
    for (uint32_t i = 0; i < t->nprocs; i++)
        all[i] = (int)i;
    sort_tree = t;
    qsort(all, t->nprocs, sizeof *all, by_start);
    for (uint32_t k = 0; k < t->nprocs; k++) {
        rpt_proc *p = &t->procs[all[k]];
        if (p->parent < 0)
            continue;
        rpt_proc *up = &t->procs[p->parent];
        up->kids = rp_xrealloc(up->kids, (up->nkids + 1) * sizeof *up->kids);
        up->kids[up->nkids++] = all[k];
    }
    t->order = rp_xmalloc((t->nprocs + 1) * sizeof *t->order);
    uint32_t n = 0;
    for (uint32_t k = 0; k < t->nprocs; k++)
        if (t->procs[all[k]].parent < 0)
            visit(t, all[k], 0, &n);
    free(all);
}

/* ---- memory held at once ---- */

typedef struct step { uint64_t t; int64_t dv; } step;

static int by_time(const void *a, const void *b)
{
    const step *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->dv > 0) - (y->dv > 0);   /* ends before starts at the same time */
}

/* The highest sum over time of measure m of the processes of one host
 * (report_tree.h: at_once). */
static uint64_t host_at_once(const rpt_tree *t, const char *host, int m)
{
    uint32_t n = 0, cap = 0;
    step *st = NULL;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const rpt_proc *p = &t->procs[i];
        if (strcmp(p->hostname, host))
            continue;
        for (uint32_t k = 0; k < p->series.n; k++) {
            uint64_t v = p->series.p[k].v[m];
            if (!v)
                continue;
            uint64_t from = p->series.t0 + p->series.p[k].t_ns;
            uint64_t to = k + 1 < p->series.n ? p->series.t0 + p->series.p[k + 1].t_ns
                                              : (p->t_last > from ? p->t_last : from) + 1;
            if (n + 2 > cap) {
                cap = cap ? 2 * cap : 256;
                st = rp_xrealloc(st, cap * sizeof *st);
            }
            st[n++] = (step){from, (int64_t)v};
            st[n++] = (step){to, -(int64_t)v};
        }
    }
    if (n)
        qsort(st, n, sizeof *st, by_time);
    int64_t now = 0, high = 0;
    for (uint32_t i = 0; i < n; i++) {
        now += st[i].dv;
        high = now > high ? now : high;
    }
    free(st);
    return (uint64_t)high;
}

static void held_at_once(rpt_tree *t)
{
    for (uint32_t i = 0; i < t->nprocs; i++) {
        uint32_t k = 0;
        while (k < i && strcmp(t->procs[k].hostname, t->procs[i].hostname))
            k++;
        if (k < i)
            continue;   /* host counted already */
        for (int m = 0; m < 3; m++)
            t->at_once[m] += host_at_once(t, t->procs[i].hostname, m);
    }
}

/* ---- ranks ---- */

static int rank_cmp_text(const char *a, const char *b)
{
    char *ea, *eb;
    long long x = strtoll(a, &ea, 10), y = strtoll(b, &eb, 10);
    if (*a && *b && !*ea && !*eb)
        return x < y ? -1 : x > y;
    return strcmp(a, b);
}

static int measure_for_sort;

static int by_peak(const void *a, const void *b)
{
    const rpt_rank *x = a, *y = b;
    uint64_t px = x->peak[measure_for_sort], py = y->peak[measure_for_sort];
    if (px != py)
        return px > py ? -1 : 1;
    return rank_cmp_text(x->rank, y->rank);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static const char *const measure_names[3] = {"peak device reserved", "peak device allocated", "peak host buffers"};

/* Worst first: violation, inconclusive, clean (usage errors do not occur
 * for a log that was read). */
static int severity(int status)
{
    return status == RP_EXIT_VIOLATION ? 2 : status == RP_EXIT_INCONCLUSIVE ? 1 : 0;
}

static void find_ranks(rpt_tree *t)
{
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const rpt_proc *p = &t->procs[i];
        if (!p->rank)
            continue;
        uint32_t k = 0;
        while (k < t->nranks && strcmp(t->ranks[k].rank, p->rank))
            k++;
        if (k == t->nranks) {
            t->ranks = rp_xrealloc(t->ranks, (t->nranks + 1) * sizeof *t->ranks);
            memset(&t->ranks[k], 0, sizeof t->ranks[k]);
            t->ranks[k].rank = p->rank;
            t->nranks++;
        }
        rpt_rank *rk = &t->ranks[k];
        rk->procs = rp_xrealloc(rk->procs, (rk->nprocs + 1) * sizeof *rk->procs);
        rk->procs[rk->nprocs++] = (int)i;
        for (int m = 0; m < 3; m++)
            rk->peak[m] = p->peak[m] > rk->peak[m] ? p->peak[m] : rk->peak[m];
        if (severity(p->verdict.status) > severity(rk->status))
            rk->status = p->verdict.status;
    }
    if (!t->nranks)
        return;
    /* Ranked by device reserved when any rank used the GPU, else by host
     * buffers. */
    t->rank_measure = 2;
    for (uint32_t k = 0; k < t->nranks; k++)
        if (t->ranks[k].peak[0])
            t->rank_measure = 0;
    uint64_t *v = rp_xmalloc(t->nranks * sizeof *v);
    for (int m = 0; m < 3; m++) {
        for (uint32_t k = 0; k < t->nranks; k++)
            v[k] = t->ranks[k].peak[m];
        qsort(v, t->nranks, sizeof *v, cmp_u64);
        t->rank_median[m] = t->nranks % 2 ? v[t->nranks / 2] : v[t->nranks / 2 - 1] / 2 + v[t->nranks / 2] / 2;
    }
    free(v);
    /* A rank differs when one of its peaks is far from the median of the
     * ranks' (report_tree.h), or when its verdict is worse than most. */
    uint32_t worse = 0;
    for (uint32_t k = 0; k < t->nranks; k++)
        worse += t->ranks[k].status != RP_EXIT_CLEAN;
    for (uint32_t k = 0; t->nranks >= RPT_RANK_MIN_RANKS && k < t->nranks; k++) {
        rpt_rank *rk = &t->ranks[k];
        size_t len = 0;
        for (int m = 0; m < 3; m++) {
            uint64_t x = rk->peak[m], med = t->rank_median[m];
            uint64_t gap = x > med ? x - med : med - x;
            if (gap < RPT_RANK_MIN_BYTES)
                continue;
            if (!((double)x > RPT_RANK_FACTOR * (double)med || (double)x * RPT_RANK_FACTOR < (double)med))
                continue;
            char a[32], b[32];
            rn_bytes(x, a, sizeof a);
            rn_bytes(med, b, sizeof b);
            if (med)
                len += (size_t)snprintf(rk->why + len, sizeof rk->why - len, "%s%s %s, %.1fx the median %s",
                                        len ? "; " : "", measure_names[m], a, (double)x / (double)med, b);
            else
                len += (size_t)snprintf(rk->why + len, sizeof rk->why - len, "%s%s %s, the median 0 B",
                                        len ? "; " : "", measure_names[m], a);
            if (len >= sizeof rk->why)
                len = sizeof rk->why - 1;
        }
        if (rk->status != RP_EXIT_CLEAN && 2 * worse < t->nranks)
            snprintf(rk->why + len, sizeof rk->why - len, "%sverdict %s where most ranks are clean", len ? "; " : "",
                     rk->status == RP_EXIT_VIOLATION ? "VIOLATION" : "INCONCLUSIVE");
        t->ndiffer += rk->why[0] != 0;
    }
    measure_for_sort = t->rank_measure;
    qsort(t->ranks, t->nranks, sizeof *t->ranks, by_peak);
}

/* ---- the verdict ---- */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void make_verdict(rpt_tree *t)
{
    t->worst = -1;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        int s = t->procs[i].verdict.status;
        t->counts[severity(s)]++;
        if (t->worst < 0 || severity(s) > severity(t->procs[t->worst].verdict.status))
            t->worst = (int)i;
    }
    rp_verdict *v = &t->verdict;
    char tail[256], bad[128] = "";
    uint32_t damaged = 0;
    for (uint32_t i = 0; i < t->nprocs; i++)
        damaged += rpt_proc_damaged(&t->procs[i]);
    if (t->nbad)
        snprintf(bad, sizeof bad, "; %u log%s could not be read", t->nbad, t->nbad == 1 ? "" : "s");
    snprintf(tail, sizeof tail, "%u process%s: %u violation, %u inconclusive, %u clean%s%s", t->nprocs,
             t->nprocs == 1 ? "" : "es", t->counts[2], t->counts[1], t->counts[0], bad,
             damaged ? "; damaged logs read as far as they go" : "");
    if (t->worst < 0) {
        v->status = RP_EXIT_USAGE;
        v->result = "unreadable";
        snprintf(v->text, sizeof v->text, "no log could be read%s", bad);
        return;
    }
    const rpt_proc *w = &t->procs[t->worst];
    if (w->verdict.status == RP_EXIT_CLEAN) {
        *v = w->verdict;
        snprintf(v->text, sizeof v->text, "clean (%s)", tail);
        return;
    }
    v->status = w->verdict.status;
    v->result = w->verdict.result;
    char shown[256];
    /* The process's own verdict first: a long one loses the tail, never
     * what it says. */
    if (snprintf(v->text, sizeof v->text, "%s in pid %u (%s); %s", w->verdict.text, w->pid,
                 rn_text(shown, sizeof shown, base_name(w->path)), tail) >= (int)sizeof v->text)
        v->text[sizeof v->text - 1] = '\0';
}

int rpt_tree_status(const rpt_tree *t)
{
    if (t->verdict.status != RP_EXIT_VIOLATION && t->nbad)
        return RP_EXIT_USAGE;
    return t->verdict.status;
}

int rpt_tree_read(rpt_tree *t, char *const *paths, int npaths, const rpt_options *o, int full_stacks, int json)
{
    memset(t, 0, sizeof *t);
    t->worst = -1;
    names logs = {0};
    size_t wlen = 0;
    for (int i = 0; i < npaths; i++) {
        struct stat st;
        if (stat(paths[i], &st)) {
            char shown[512];
            fprintf(stderr, "trace-replay report: %s: %s\n", rn_text(shown, sizeof shown, paths[i]), strerror(errno));
            for (uint32_t k = 0; k < logs.n; k++)
                free(logs.v[k]);
            free(logs.v);
            return -1;
        }
        uint32_t before_n = logs.n;
        if (S_ISDIR(st.st_mode)) {
            if (list_dir(paths[i], &logs)) {
                fprintf(stderr, "trace-replay report: %s: %s\n", paths[i], strerror(errno));
                continue;
            }
            if (logs.n == before_n)
                fprintf(stderr, "trace-replay report: %s: no log in this directory\n", paths[i]);
        } else {
            names_add(&logs, rp_xstrdup(paths[i]));
        }
        wlen += strlen(paths[i]) + 1;
    }
    t->where = rp_xmalloc(wlen + 1);
    t->where[0] = '\0';
    for (int i = 0; i < npaths; i++)
        snprintf(t->where + strlen(t->where), wlen + 1 - strlen(t->where), "%s%s", i ? " " : "", paths[i]);
    /* A directory and a file in it, or a log's segments named apart. */
    uint32_t kept = (uint32_t)rpt_same_logs(logs.v, (int)logs.n, "trace-replay report");
    for (uint32_t i = kept; i < logs.n; i++)
        free(logs.v[i]);
    logs.n = kept;
    if (json && !(t->parts = tmpfile()))
        fprintf(stderr, "trace-replay report: no temporary file for the processes' JSON: %s\n", strerror(errno));
    for (uint32_t i = 0; i < logs.n; i++) {
        for (int run = 1; run; )
            run = read_one(t, logs.v[i], run, o, full_stacks);
        free(logs.v[i]);
    }
    free(logs.v);
    link_tree(t);
    held_at_once(t);
    find_ranks(t);
    make_verdict(t);
    return 0;
}

void rpt_tree_free(rpt_tree *t)
{
    for (uint32_t i = 0; i < t->nprocs; i++) {
        rpt_proc *p = &t->procs[i];
        free(p->path);
        free(p->hostname);
        free(p->cmdline);
        free(p->exe);
        free(p->rank);
        free(p->ending);
        free(p->damage);
        free(p->findings);
        free(p->violation);
        free(p->kids);
        rpt_series_free(&p->series);
    }
    for (uint32_t i = 0; i < t->nbad; i++) {
        free(t->bad[i].path);
        free(t->bad[i].error);
    }
    for (uint32_t i = 0; i < t->nranks; i++)
        free(t->ranks[i].procs);
    free(t->procs);
    free(t->order);
    free(t->bad);
    free(t->ranks);
    free(t->where);
    if (t->parts)
        fclose(t->parts);
    memset(t, 0, sizeof *t);
}
