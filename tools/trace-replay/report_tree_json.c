/*
 * report_tree_json.c - the report over several logs for tools (schema
 * trace-replay-report-tree/1, docs/report-json.md "Several logs").  Each
 * process carries its whole single report (trace-replay-report/2) as
 * "report"; the HTML page embeds this same object.
 */
#include "report_tree.h"

#include <string.h>

#include "json.h"

static const char *relation_name(char r)
{
    return r == 'e' ? "exec" : r == 'c' ? "child" : "root";
}

static void verdict_obj(rn_json *w, const char *key, const rp_verdict *v)
{
    rn_json_obj(w, key);
    rn_json_str(w, "result", v->result);
    rn_json_u64(w, "exit_status", (uint64_t)v->status);
    rn_json_str(w, "text", v->text);
    rn_json_end_obj(w);
}

/* The process's own report, copied from the parts file where it was
 * written while its log was open. */
static int embed_report(rn_json *w, const rpt_tree *t, const rpt_proc *p)
{
    if (!t->parts) {
        rn_json_null(w, "report");
        return 0;
    }
    rn_json_raw(w, "report", "", 0);
    rn_json_flush(w);
    if (fseek(t->parts, p->json_off, SEEK_SET))
        return -1;
    char buf[65536];
    size_t left = p->json_len;
    while (left) {
        size_t n = fread(buf, 1, left < sizeof buf ? left : sizeof buf, t->parts);
        if (!n)
            return -1;
        left -= n;
        if (!left && buf[n - 1] == '\n')
            n--;   /* the single report ends its line; here it goes on */
        fwrite(buf, 1, n, w->f);
    }
    return 0;
}

static int process(rn_json *w, const rpt_tree *t, int i)
{
    const rpt_proc *p = &t->procs[i];
    rn_json_obj(w, NULL);
    rn_json_u64(w, "index", (uint64_t)i);
    rn_json_str(w, "log", p->path);
    rn_json_u64(w, "run", (uint64_t)p->run);
    rn_json_u64(w, "pid", p->pid);
    rn_json_u64(w, "ppid", p->ppid);
    rn_json_str(w, "hostname", p->hostname);
    rn_json_str(w, "cmdline", p->cmdline);
    rn_json_str(w, "exe", p->exe);
    rn_json_str(w, "rank", p->rank);
    rn_json_str(w, "ending", p->ending);
    if (p->parent >= 0)
        rn_json_u64(w, "parent", (uint64_t)p->parent);
    else
        rn_json_null(w, "parent");
    rn_json_str(w, "relation", relation_name(p->relation));
    rn_json_u64(w, "depth", (uint64_t)p->depth);
    rn_json_arr(w, "children");
    for (uint32_t k = 0; k < p->nkids; k++)
        rn_json_u64(w, NULL, (uint64_t)p->kids[k]);
    rn_json_end_arr(w);
    rn_json_u64(w, "wall_start_ns", p->wall_start_ns);
    rn_json_u64(w, "mono_start_ns", p->mono_start_ns);
    rn_json_u64(w, "t_last_ns", p->t_last);
    rn_json_bool(w, "clean_end", p->clean_end);
    rn_json_str(w, "damage", p->damage);
    rn_json_u64(w, "events", p->events);
    rn_json_str(w, "shape", p->has_device ? "device" : "python");
    rn_json_bool(w, "host_watched", p->host_watched);
    rn_json_u64(w, "peak_reserved", p->peak[0]);
    rn_json_u64(w, "peak_allocated", p->peak[1]);
    rn_json_u64(w, "peak_host", p->peak[2]);
    rn_json_u64(w, "freed_in_collections_device_bytes", p->gc_dev_bytes);
    rn_json_u64(w, "freed_in_collections_host_bytes", p->gc_host_bytes);
    rn_json_u64(w, "double_inits", p->double_inits);
    rn_json_u64(w, "collections", p->collections);
    rn_json_u64(w, "violations_total", p->violations);
    rn_json_bool(w, "model_violated", p->model_violated);
    verdict_obj(w, "verdict", &p->verdict);
    rn_json_arr(w, "findings");
    for (const char *s = p->findings; *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        while (n && *s == ' ')
            s++, n--;
        rn_json_strn(w, NULL, s, n);
        s += n + (e ? 1 : 0);
    }
    rn_json_end_arr(w);
    int rc = embed_report(w, t, p);
    rn_json_end_obj(w);
    return rc;
}

static void totals(rn_json *w, const rpt_tree *t)
{
    uint64_t v[12] = {0};
    for (uint32_t i = 0; i < t->nprocs; i++) {
        const rpt_proc *p = &t->procs[i];
        v[0] += p->events;
        v[1] += p->peak[0];
        v[2] += p->peak[1];
        v[3] += p->peak[2];
        v[4] += p->gc_dev_bytes;
        v[5] += p->gc_host_bytes;
        v[6] += p->double_inits;
        v[7] += p->collections;
        v[8] += p->violations;
        v[9] += (uint64_t)p->model_violated;
        v[10] += rpt_proc_damaged(p);
        v[11] += p->no_end_only;
    }
    static const char *const keys[12] = {
        "events", "peak_reserved_sum", "peak_allocated_sum", "peak_host_sum", "freed_in_collections_device_bytes",
        "freed_in_collections_host_bytes", "double_inits", "collections", "violations_total", "model_violations",
        "damaged_logs", "logs_without_end"};
    rn_json_obj(w, "totals");
    rn_json_u64(w, "processes", t->nprocs);
    for (int k = 0; k < 12; k++)
        rn_json_u64(w, keys[k], v[k]);
    rn_json_u64(w, "peak_reserved_at_once", t->at_once[0]);
    rn_json_u64(w, "peak_allocated_at_once", t->at_once[1]);
    rn_json_u64(w, "peak_host_at_once", t->at_once[2]);
    rn_json_obj(w, "verdicts");
    rn_json_u64(w, "violation", t->counts[2]);
    rn_json_u64(w, "inconclusive", t->counts[1]);
    rn_json_u64(w, "clean", t->counts[0]);
    rn_json_end_obj(w);
    rn_json_end_obj(w);
}

static const char *status_result(int s)
{
    return s == RP_EXIT_VIOLATION ? "violation" : s == RP_EXIT_INCONCLUSIVE ? "inconclusive" : "clean";
}

static void ranks(rn_json *w, const rpt_tree *t)
{
    static const char *const measures[3] = {"peak_reserved", "peak_allocated", "peak_host"};
    if (!t->nranks) {
        rn_json_null(w, "ranks");
        return;
    }
    rn_json_obj(w, "ranks");
    rn_json_str(w, "ordered_by", measures[t->rank_measure]);
    rn_json_obj(w, "median");
    for (int m = 0; m < 3; m++)
        rn_json_u64(w, measures[m], t->rank_median[m]);
    rn_json_end_obj(w);
    rn_json_obj(w, "rule");
    rn_json_double(w, "factor", RPT_RANK_FACTOR);
    rn_json_u64(w, "min_bytes", RPT_RANK_MIN_BYTES);
    rn_json_u64(w, "min_ranks", RPT_RANK_MIN_RANKS);
    rn_json_end_obj(w);
    rn_json_arr(w, "list");
    for (uint32_t k = 0; k < t->nranks; k++) {
        const rpt_rank *rk = &t->ranks[k];
        rn_json_obj(w, NULL);
        rn_json_str(w, "rank", rk->rank);
        rn_json_arr(w, "processes");
        for (uint32_t i = 0; i < rk->nprocs; i++)
            rn_json_u64(w, NULL, (uint64_t)rk->procs[i]);
        rn_json_end_arr(w);
        for (int m = 0; m < 3; m++)
            rn_json_u64(w, measures[m], rk->peak[m]);
        rn_json_str(w, "verdict", status_result(rk->status));
        rn_json_bool(w, "differs", rk->why[0] != 0);
        rn_json_str(w, "why", rk->why[0] ? rk->why : NULL);
        rn_json_end_obj(w);
    }
    rn_json_end_arr(w);
    rn_json_arr(w, "differ");
    for (uint32_t k = 0; k < t->nranks; k++)
        if (t->ranks[k].why[0])
            rn_json_str(w, NULL, t->ranks[k].rank);
    rn_json_end_arr(w);
    rn_json_end_obj(w);
}

int rpt_tree_print_json(const rpt_tree *t, FILE *out)
{
    rn_json w;
    int rc = 0;
    rn_json_init(&w, out);
    rn_json_obj(&w, NULL);
    rn_json_str(&w, "schema", "trace-replay-report-tree/1");
    rn_json_obj(&w, "verdict");
    rn_json_str(&w, "result", t->verdict.result);
    rn_json_u64(&w, "exit_status", (uint64_t)rpt_tree_status(t));
    rn_json_str(&w, "text", t->verdict.text);
    if (t->worst >= 0 && t->verdict.status != RP_EXIT_CLEAN)
        rn_json_u64(&w, "process", (uint64_t)t->worst);
    else
        rn_json_null(&w, "process");
    rn_json_end_obj(&w);
    rn_json_str(&w, "where", t->where);
    rn_json_arr(&w, "roots");
    for (uint32_t k = 0; k < t->nprocs; k++)
        if (t->procs[t->order[k]].parent < 0)
            rn_json_u64(&w, NULL, (uint64_t)t->order[k]);
    rn_json_end_arr(&w);
    rn_json_arr(&w, "order");
    for (uint32_t k = 0; k < t->nprocs; k++)
        rn_json_u64(&w, NULL, (uint64_t)t->order[k]);
    rn_json_end_arr(&w);
    totals(&w, t);
    ranks(&w, t);
    rn_json_arr(&w, "unreadable");
    for (uint32_t i = 0; i < t->nbad; i++) {
        rn_json_obj(&w, NULL);
        rn_json_str(&w, "log", t->bad[i].path);
        rn_json_str(&w, "error", t->bad[i].error);
        rn_json_end_obj(&w);
    }
    rn_json_end_arr(&w);
    rn_json_arr(&w, "processes");
    for (uint32_t i = 0; i < t->nprocs; i++)
        rc |= process(&w, t, (int)i);
    rn_json_end_arr(&w);
    rn_json_end_obj(&w);
    return rn_json_close(&w) || rc ? -1 : 0;
}
