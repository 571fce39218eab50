/* report_tree_text.c - the report over several logs, for people. */
#include "report_tree.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#define COMMAND_SHOWN 60   /* characters of a command line in the tree */

static const char *verdict_word(int status)
{
    return status == RP_EXIT_VIOLATION ? "VIOLATION" : status == RP_EXIT_INCONCLUSIVE ? "INCONCLUSIVE" : "clean";
}

/* A command line short enough for one line of the tree: each word that is
 * a path by its last part ("python3 mp_pool.py fork 6"), cut at
 * COMMAND_SHOWN characters.  The whole line is under Processes. */
static void short_command(const rpt_proc *p, char *buf, size_t len)
{
    char cut[COMMAND_SHOWN + 4];
    const char *c = p->cmdline && *p->cmdline ? p->cmdline : p->exe && *p->exe ? p->exe : "(unknown command)";
    size_t n = 0;
    while (*c && n < COMMAND_SHOWN) {
        const char *end = strchr(c, ' ');
        size_t wl = end ? (size_t)(end - c) : strlen(c);
        const char *slash = memrchr(c, '/', wl);
        if (slash && slash + 1 < c + wl) {
            wl -= (size_t)(slash + 1 - c);
            c = slash + 1;
        }
        for (size_t i = 0; i < wl && n < COMMAND_SHOWN; i++)
            cut[n++] = c[i];
        c += wl;
        if (*c == ' ' && n < COMMAND_SHOWN)
            cut[n++] = *c++;
    }
    if (*c) {   /* more than fits: end on "..." */
        n = n > COMMAND_SHOWN - 3 ? COMMAND_SHOWN - 3 : n;
        memcpy(cut + n, "...", 3);
        n += 3;
    }
    cut[n] = '\0';
    rn_text(buf, len, cut);
}

/* The peak of host buffers, or why there is none. */
static void host_peak(const rpt_proc *p, char *buf, size_t len)
{
    if (p->host_watched)
        rn_bytes(p->peak[2], buf, len);
    else
        snprintf(buf, len, "not watched");
}

static void peaks_text(const rpt_proc *p, char *buf, size_t len)
{
    char a[32], b[32];
    rn_bytes(p->peak[0], a, sizeof a);
    host_peak(p, b, sizeof b);
    if (p->has_device)
        snprintf(buf, len, "device %s, host %s", a, b);
    else
        snprintf(buf, len, "host %s", b);
}

static const char *relation_text(const rpt_proc *p)
{
    return p->relation == 'e' ? "exec'd image" : "";
}

static void print_tree(const rpt_tree *t, FILE *out)
{
    fprintf(out, "\nProcess tree (pid, command, verdict, peaks; children under their parent, in order of start)\n");
    for (uint32_t k = 0; k < t->nprocs; k++) {
        const rpt_proc *p = &t->procs[t->order[k]];
        char cmd[4 * COMMAND_SHOWN], peaks[96], rank[64] = "", indent[128] = "";
        /* "|  " for every level above this one whose node has siblings still
         * to come, then "|- " or "`- " for this one. */
        size_t il = 0;
        for (int d = 1; d <= p->depth && il + 4 < sizeof indent; d++) {
            int anc = t->order[k];
            for (int up = p->depth; up > d; up--)
                anc = t->procs[anc].parent;
            const rpt_proc *a = &t->procs[anc], *par = &t->procs[a->parent];
            int last = par->kids[par->nkids - 1] == anc;
            il += (size_t)snprintf(indent + il, sizeof indent - il, "%s",
                                   d == p->depth ? (last ? "`- " : "|- ") : (last ? "   " : "|  "));
        }
        short_command(p, cmd, sizeof cmd);
        peaks_text(p, peaks, sizeof peaks);
        if (p->rank)
            snprintf(rank, sizeof rank, " rank %.40s", p->rank);
        const char *rel = relation_text(p);
        fprintf(out, "  %s%u%s %s%s%s%s  %s  [%s]\n", indent, p->pid, rank, cmd, *rel ? " (" : "", rel,
                *rel ? ")" : "", verdict_word(p->verdict.status), peaks);
    }
}

static void print_processes(const rpt_tree *t, FILE *out)
{
    fprintf(out, "\nProcesses\n");
    for (uint32_t k = 0; k < t->nprocs; k++) {
        const rpt_proc *p = &t->procs[t->order[k]];
        char a[1024], b[512];
        fprintf(out, "  pid %u (parent %u%s)%s%s: %s\n", p->pid, p->ppid,
                p->relation == 'e' ? ", an exec'd image" : p->relation == 'r' && p->ppid ? ", not traced" : "",
                p->rank ? " rank " : "", p->rank ? rn_text(b, sizeof b, p->rank) : "",
                p->cmdline && *p->cmdline ? rn_text(a, sizeof a, p->cmdline) : "(unknown command)");
        fprintf(out, "    log        %s", rn_text(a, sizeof a, p->path));
        if (p->run > 1)
            fprintf(out, " (log %d of the file)", p->run);
        fprintf(out, "; %" PRIu64 " events, %.3f s", p->events,
                p->t_last > p->mono_start_ns ? (double)(p->t_last - p->mono_start_ns) / 1e9 : 0.0);
        if (p->damage)
            fprintf(out, "; damaged: %s", p->damage);
        else if (!p->clean_end)
            fprintf(out, "; no end record");
        else if (p->ending)
            fprintf(out, "; ended: %s", rn_text(b, sizeof b, p->ending));
        fputc('\n', out);
        char r[32], al[32], h[32];
        rn_bytes(p->peak[0], r, sizeof r);
        rn_bytes(p->peak[1], al, sizeof al);
        host_peak(p, h, sizeof h);
        if (p->has_device)
            fprintf(out, "    memory     peak device reserved %s, allocated %s, host buffers %s\n", r, al, h);
        else
            fprintf(out, "    memory     peak host buffers %s (no GPU use seen)\n", h);
        /* The single report's Findings lines and the violation, indented
         * once more. */
        for (const char *s = p->findings, *next = p->violation; s; s = next, next = NULL)
            while (*s) {
                const char *e = strchr(s, '\n');
                size_t n = e ? (size_t)(e - s) : strlen(s);
                fprintf(out, "  %.*s\n", (int)n, s);
                s += n + (e ? 1 : 0);
            }
        fprintf(out, "    verdict: %s\n", p->verdict.text);
    }
    fprintf(out, "  (each process's whole report: trace-replay report LOG)\n");
}

static void print_totals(const rpt_tree *t, FILE *out)
{
    uint64_t events = 0, peak[3] = {0}, gcd = 0, gch = 0, dinits = 0, coll = 0, viol = 0, models = 0;
    uint32_t damaged = 0, unfinished = 0, hosts = 0;
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const rpt_proc *p = &t->procs[i];
        events += p->events;
        for (int m = 0; m < 3; m++)
            peak[m] += p->peak[m];
        gcd += p->gc_dev_bytes;
        gch += p->gc_host_bytes;
        dinits += p->double_inits;
        coll += p->collections;
        viol += p->violations;
        models += (uint64_t)p->model_violated;
        damaged += rpt_proc_damaged(p);
        unfinished += p->no_end_only;
        uint32_t k = 0;
        while (k < i && strcmp(t->procs[k].hostname, p->hostname))
            k++;
        hosts += k == i;
    }
    char a[32], b[32], c[32];
    fprintf(out, "\nTotals over %u processes on %u host%s\n", t->nprocs, hosts, hosts == 1 ? "" : "s");
    fprintf(out, "  events                     %" PRIu64 "\n", events);
    rn_bytes(peak[0], a, sizeof a);
    rn_bytes(peak[1], b, sizeof b);
    rn_bytes(peak[2], c, sizeof c);
    fprintf(out, "  sum of peaks               device reserved %s, allocated %s, host buffers %s\n"
                 "                             (each process's own peak: they need not have coincided)\n", a, b, c);
    rn_bytes(t->at_once[0], a, sizeof a);
    rn_bytes(t->at_once[1], b, sizeof b);
    rn_bytes(t->at_once[2], c, sizeof c);
    fprintf(out, "  held at once, at most      device reserved %s, allocated %s, host buffers %s\n"
                 "                             (the processes' memory over time added up, per host)\n", a, b, c);
    rn_bytes(gcd, a, sizeof a);
    rn_bytes(gch, b, sizeof b);
    fprintf(out, "  freed only by collections  device %s, host buffers %s\n", a, b);
    fprintf(out, "  double initialisations     %" PRIu64 "\n", dinits);
    fprintf(out, "  garbage collections        %" PRIu64 "\n", coll);
    fprintf(out, "  violations                 %" PRIu64 " of the model-free checks, %" PRIu64 " pool model%s broken\n",
            viol, models, models == 1 ? "" : "s");
    fprintf(out, "  verdicts                   %u violation, %u inconclusive, %u clean\n", t->counts[2], t->counts[1],
            t->counts[0]);
    if (damaged || unfinished)
        fprintf(out, "  logs                       %u damaged, %u without an end record\n", damaged, unfinished);
    for (uint32_t i = 0; i < t->nbad; i++) {
        char p[512], e[512];
        fprintf(out, "  unreadable                 %s: %s\n", rn_text(p, sizeof p, t->bad[i].path),
                rn_text(e, sizeof e, t->bad[i].error));
    }
}

static void print_ranks(const rpt_tree *t, FILE *out)
{
    if (!t->nranks)
        return;
    static const char *const by[3] = {"peak device reserved", "peak device allocated", "peak host buffers"};
    fprintf(out, "\nRanks (%u, by %s; a rank's peak is the largest of its processes')\n", t->nranks,
            by[t->rank_measure]);
    fprintf(out, "  %-8s %14s %14s %14s %5s  %s\n", "rank", "dev reserved", "dev allocated", "host buffers", "procs",
            "verdict");
    for (uint32_t k = 0; k < t->nranks; k++) {
        const rpt_rank *rk = &t->ranks[k];
        char r[32], a[32], h[32], name[64];
        rn_bytes(rk->peak[0], r, sizeof r);
        rn_bytes(rk->peak[1], a, sizeof a);
        rn_bytes(rk->peak[2], h, sizeof h);
        fprintf(out, "  %-8s %14s %14s %14s %5u  %s%s\n", rn_text(name, sizeof name, rk->rank), r, a, h, rk->nprocs,
                verdict_word(rk->status), rk->why[0] ? "  DIFFERS" : "");
    }
    char med[32];
    rn_bytes(t->rank_median[t->rank_measure], med, sizeof med);
    if (t->nranks < RPT_RANK_MIN_RANKS)
        fprintf(out, "  (fewer than %d ranks: none is named as differing from the others)\n", RPT_RANK_MIN_RANKS);
    else if (!t->ndiffer)
        fprintf(out, "  no rank differs from the others (median %s %s; a rank differs when a peak is over %.1fx or "
                     "under 1/%.1f of the ranks' median and %llu MiB away, or its verdict is worse than most)\n",
                by[t->rank_measure], med, RPT_RANK_FACTOR, RPT_RANK_FACTOR, RPT_RANK_MIN_BYTES >> 20);
    else {
        fprintf(out, "  differ from the others (a peak over %.1fx or under 1/%.1f of the ranks' median and %llu MiB "
                     "away, or a verdict worse than most):\n", RPT_RANK_FACTOR, RPT_RANK_FACTOR,
                RPT_RANK_MIN_BYTES >> 20);
        for (uint32_t k = 0; k < t->nranks; k++) {
            char name[64];
            if (t->ranks[k].why[0])
                fprintf(out, "    rank %s: %s\n", rn_text(name, sizeof name, t->ranks[k].rank), t->ranks[k].why);
        }
    }
}

int rpt_tree_print_text(const rpt_tree *t, FILE *out)
{
    char a[2048];
    fprintf(out, "trace-replay report: %u process%s (%u log%s) from %s\n", t->nprocs, t->nprocs == 1 ? "" : "es",
            t->nprocs + t->nbad, t->nprocs + t->nbad == 1 ? "" : "s", rn_text(a, sizeof a, t->where));
    if (t->nprocs) {
        const rpt_proc *first = &t->procs[t->order[0]];
        uint64_t wall = first->wall_start_ns;
        char when[64] = "start time unknown";
        time_t s = (time_t)(wall / 1000000000ULL);
        struct tm tm;
        if (wall && gmtime_r(&s, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
        fprintf(out, "  first      %s: %s\n", when,
                first->cmdline && *first->cmdline ? rn_text(a, sizeof a, first->cmdline) : "(unknown command)");
        print_tree(t, out);
        print_processes(t, out);
    }
    print_totals(t, out);
    print_ranks(t, out);
    fprintf(out, "\nverdict: %s\n", t->verdict.text);
    return ferror(out) ? -1 : 0;
}
