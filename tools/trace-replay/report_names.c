/* report_names.c - sites and stacks as text, and the orders of the tables. */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

double rpt_seconds(const rpt *r, uint64_t t_ns)
{
    const tf_header *h = tf_reader_header(r->reader);
    uint64_t t0 = h->mono_start_ns && h->mono_start_ns <= r->t_first ? h->mono_start_ns : r->t_first;
    return t_ns > t0 ? (double)(t_ns - t0) / 1e9 : 0.0;
}

/* The value of the INFO record key, the n-th of that key (from 0), or NULL. */
static const char *info_value(const rpt *r, const char *key, uint32_t n)
{
    const char *k, *value;
    for (uint32_t i = 0; i < tf_reader_info_count(r->reader); i++)
        if (tf_reader_info(r->reader, i, &k, &value) && !strcmp(k, key) && !n--)
            return value;
    return NULL;
}

/* A "cuda_runtime" record is "PATH version=N", or "PATH" when the runtime
 * would not tell: its version (0 unknown) and the file name of PATH. */
static int32_t runtime_of(const char *info, const char **file, size_t *file_len)
{
    const char *tag = strstr(info, " version=");
    size_t path_len = tag ? (size_t)(tag - info) : strlen(info);
    const char *base = info + path_len;
    while (base > info && base[-1] != '/')
        base--;
    *file = base;
    *file_len = path_len - (size_t)(base - info);
    return tag ? (int32_t)strtol(tag + 9, NULL, 10) : 0;
}

int rpt_has_device(const rpt *r)
{
    return r->npools || r->kinds[TF_EV_CUDA_ALLOC] || r->kinds[TF_EV_CUDA_FREE] ||
           r->kinds[TF_EV_POOL_ALLOC] || r->kinds[TF_EV_POOL_FREE] || r->kinds[TF_EV_POOL_SEGMENT];
}

const char *rpt_info_value(const rpt *r, const char *key)
{
    for (uint32_t i = 0; i < tf_reader_info_count(r->reader); i++) {
        const char *k, *v;
        if (tf_reader_info(r->reader, i, &k, &v) && k && !strcmp(k, key))
            return v;
    }
    return NULL;
}

long rpt_setting_number(const rpt *r, const char *key)
{
    /* "output=...;stack_depth=32;...;py_allocs=0;...": the key after a ';'
     * (or first), its value up to the next. */
    const char *settings = tf_reader_header(r->reader)->settings;
    size_t n = strlen(key);
    for (const char *at = settings; at && *at; at = strchr(at, ';') ? strchr(at, ';') + 1 : NULL) {
        if (strncmp(at, key, n) || at[n] != '=')
            continue;
        char *end;
        long v = strtol(at + n + 1, &end, 10);
        return end > at + n + 1 && (*end == ';' || !*end) ? v : -1;
    }
    return -1;
}

static int by_type_name(const void *a, const void *b)
{
    const rpt_double_init *x = *(const rpt_double_init *const *)a, *y = *(const rpt_double_init *const *)b;
    return (x->type_name > y->type_name) - (x->type_name < y->type_name);
}

static int by_count_then_seq(const void *a, const void *b)
{
    const rpt_double_init *x = *(const rpt_double_init *const *)a, *y = *(const rpt_double_init *const *)b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->first_seq > y->first_seq) - (x->first_seq < y->first_seq);
}

static int by_objects(const void *a, const void *b)
{
    const rpt_dinit_type *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->type_name > y->type_name) - (x->type_name < y->type_name);
}

rpt_dinit_type *rpt_double_inits_by_type(const rpt *r, const rpt_double_init ***ordered, uint32_t *ntypes)
{
    *ordered = NULL;
    *ntypes = 0;
    if (!r->ndinits)
        return NULL;
    const rpt_double_init **by_name = rp_xmalloc(r->ndinits * sizeof *by_name);
    for (uint32_t i = 0; i < r->ndinits; i++)
        by_name[i] = &r->dinits[i];
    qsort(by_name, r->ndinits, sizeof *by_name, by_type_name);
    rpt_dinit_type *types = rp_xcalloc(r->ndinits, sizeof *types);
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->ndinits; i++) {
        if (!i || by_name[i]->type_name != by_name[i - 1]->type_name)
            types[n++] = (rpt_dinit_type){ .type_name = by_name[i]->type_name, .first = i };
        types[n - 1].places++;
        types[n - 1].count += by_name[i]->count;
    }
    for (uint32_t t = 0; t < n; t++)
        qsort(by_name + types[t].first, types[t].places, sizeof *by_name, by_count_then_seq);
    qsort(types, n, sizeof *types, by_objects);
    /* The places again, in the types' new order. */
    const rpt_double_init **out = rp_xmalloc(r->ndinits * sizeof *out);
    for (uint32_t t = 0, k = 0; t < n; t++) {
        memcpy(out + k, by_name + types[t].first, types[t].places * sizeof *out);
        types[t].first = k;
        k += types[t].places;
    }
    free(by_name);
    *ordered = out;
    *ntypes = n;
    return types;
}

uint32_t rpt_double_init_types(const rpt *r)
{
    const rpt_double_init **ordered;
    uint32_t n;
    free(rpt_double_inits_by_type(r, &ordered, &n));
    free(ordered);
    return n;
}

const rpt_collection *rpt_open_collection(const rpt *r, uint32_t i)
{
    for (uint32_t k = 0; k < r->ncollections; k++)
        if (!r->collections[k].t_stop && i-- == 0)
            return &r->collections[k];
    return NULL;
}

int rpt_host_watched(const rpt *r)
{
    const char *settings = tf_reader_header(r->reader)->settings;
    if (settings && strstr(settings, "host_buffers=0"))
        return 0;
    for (uint32_t i = 0; info_value(r, "not_watched", i); i++)
        if (!strncmp(info_value(r, "not_watched", i), "large host blocks:", 18))
            return 0;
    return 1;
}

/* The recorder's not_watched records, and the other INFO records that say a
 * part was off: the double-initialisation check ("py_double_init" = "off:
 * ...", a static interpreter), the Python side ("python" = "... off: ..."). */
const char *rpt_not_watched(const rpt *r, uint32_t i)
{
    static _Thread_local char text[640];
    const char *key, *value;
    for (uint32_t k = 0; k < tf_reader_info_count(r->reader); k++) {
        if (!tf_reader_info(r->reader, k, &key, &value))
            continue;
        const char *what;
        if (!strcmp(key, "not_watched"))
            what = "";
        else if (!strcmp(key, "py_double_init") && !strncmp(value, "off", 3))
            what = "double initialisations: ";
        else if (!strcmp(key, "python"))
            what = "Python: ";
        else
            continue;
        if (i--)
            continue;
        if (!*what)
            return value;
        snprintf(text, sizeof text, "%s%s", what, value);
        return text;
    }
    return NULL;
}

const char *rpt_double_init_off(const rpt *r)
{
    const char *value = info_value(r, "py_double_init", 0);
    return value && !strncmp(value, "off", 3) ? value : NULL;
}

const char *rpt_python_version(const rpt *r)
{
    const tf_header *h = tf_reader_header(r->reader);
    if (h->python_version && *h->python_version)
        return h->python_version;
    const char *value = info_value(r, "python_version", 0);
    return value ? value : "unknown";
}

int32_t rpt_cuda_driver_version(const rpt *r)
{
    const tf_header *h = tf_reader_header(r->reader);
    const char *info = info_value(r, "cuda_driver_version", 0);
    return h->cuda_driver_version ? h->cuda_driver_version : info ? (int32_t)strtol(info, NULL, 10) : 0;
}

int32_t rpt_cuda_runtime_version(const rpt *r)
{
    const tf_header *h = tf_reader_header(r->reader);
    const char *info = info_value(r, "cuda_runtime", 0), *file;
    size_t file_len;
    return h->cuda_runtime_version ? h->cuda_runtime_version : info ? runtime_of(info, &file, &file_len) : 0;
}

void rpt_cuda_text(const rpt *r, char *buf, size_t len)
{
    const tf_header *h = tf_reader_header(r->reader);
    int32_t driver = rpt_cuda_driver_version(r);
    const char *info = info_value(r, "cuda_runtime", 0);
    size_t at = 0;
    snprintf(buf, len, "no CUDA seen");
    if (driver)
        at += (size_t)snprintf(buf, len, "CUDA driver %d", driver);
    /* The recorder names each runtime it saw; an older log has only the header's version. */
    if (!info && h->cuda_runtime_version && at < len)
        at += (size_t)snprintf(buf + at, len - at, "%sruntime %d", at ? ", " : "CUDA ", h->cuda_runtime_version);
    for (uint32_t i = 0; info && at < len; info = info_value(r, "cuda_runtime", ++i)) {
        const char *file;
        size_t file_len;
        int32_t version = runtime_of(info, &file, &file_len);
        const char *sep = at ? ", " : "CUDA ";
        if (version)
            at += (size_t)snprintf(buf + at, len - at, "%sruntime %d (%.*s)", sep, version, (int)file_len, file);
        else
            at += (size_t)snprintf(buf + at, len - at, "%sruntime ? (%.*s)", sep, (int)file_len, file);
    }
}

static const char *str(const rpt *r, uint32_t id)
{
    const char *s = id ? tf_reader_string(r->reader, id, NULL) : NULL;
    return s ? s : "?";
}

static void py_frame_text(const rpt *r, uint32_t code, uint32_t line, char *buf, size_t len)
{
    const tf_py_code *c = tf_reader_py_code(r->reader, code);
    if (!c) {
        snprintf(buf, len, "(code %u):%u", code, line);
        return;
    }
    if (tf_reader_py_code_is_cut(r->reader, code)) {
        snprintf(buf, len, "... (outer frames not recorded)");
        return;
    }
    snprintf(buf, len, "%s:%u (%s)", str(r, c->file), line, str(r, c->function));
}

/* Where a library's path starts naming the package: after site-packages/
 * or dist-packages/, else after lib/python3.N/ (the standard library). */
static const char *library_part(const char *file)
{
    static const char *const roots[] = {"/site-packages/", "/dist-packages/"};
    for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
        const char *at = strstr(file, roots[i]);
        if (at)
            return at + strlen(roots[i]);
    }
    for (const char *at = strstr(file, "/lib/python3."); at; at = strstr(at + 1, "/lib/python3.")) {
        const char *p = at + strlen("/lib/python3.");
        while (*p >= '0' && *p <= '9')
            p++;
        if (p > at + strlen("/lib/python3.") && *p == '/')
            return p + 1;
    }
    return NULL;
}

int rpt_py_file_is_library(const char *file)
{
    return !strncmp(file, "<frozen ", 8) || library_part(file) != NULL;
}

void rpt_library_name(const char *file, char *buf, size_t len)
{
    const char *name = !strncmp(file, "<frozen ", 8) ? file + 8 : library_part(file);
    if (!name)
        name = file;
    size_t n = strcspn(name, "/.>");
    snprintf(buf, len, "%.*s", (int)n, name);
}

void rpt_site_python(const rpt *r, const rpt_site *s, char *buf, size_t len)
{
    if (!s->py_code) {
        snprintf(buf, len, "(no Python frame)");
        return;
    }
    py_frame_text(r, s->py_code, s->py_line, buf, len);
    size_t n = strlen(buf);
    if (!s->caller_code || n + 4 >= len)
        return;
    /* "a <- b": a, called from b; "a -> numpy ones": a, calling that
     * library function (inside which the allocation was made). */
    memcpy(buf + n, s->via_library ? " -> " : " <- ", 4);
    if (!s->via_library) {
        py_frame_text(r, s->caller_code, s->caller_line, buf + n + 4, len - n - 4);
        return;
    }
    const tf_py_code *c = tf_reader_py_code(r->reader, s->caller_code);
    char lib[128];
    rpt_library_name(c ? str(r, c->file) : "?", lib, sizeof lib);
    snprintf(buf + n + 4, len - n - 4, "%s %s", lib, c ? str(r, c->function) : "?");
}

/* Allocator entry points: every allocation of their kind goes through them,
 * so the frame that called them is the one that says where. */
static int is_allocator(const char *function)
{
    static const char *const prefixes[] = {
        "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "_PyObject_Malloc", "_PyObject_Calloc",
        "_PyObject_Realloc", "PyMem_", "_PyMem_", "pymalloc_", "malloc", "calloc", "realloc", "__libc_malloc",
        "__libc_calloc", "__libc_realloc",
    };
    for (size_t i = 0; function && i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(function, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

void rpt_site_native(rn_stacks *st, const rpt_site *s, char *buf, size_t len)
{
    const rn_native_frame *f[RPT_MAX_FRAMES];
    uint32_t n = s->native_ip ? rn_stacks_native(st, s->native_stack, f, RPT_MAX_FRAMES) : 0;
    uint32_t i = s->native_index;
    while (i + 1 < n && is_allocator(f[i]->function))
        i++;
    if (i < n)
        rn_native_frame_text(f[i], buf, len);
    else
        snprintf(buf, len, "(no native stack)");
}

/* ------------------------------------------------------------- ordering */

typedef struct sort_ctx { const rpt *r; int which; } sort_ctx;

uint64_t rpt_site_figure(const rpt_site *s, int which, uint64_t *count)
{
    if (which == 'd') {
        *count = s->dev_count;
        return s->dev_bytes;
    }
    if (which == 'h') {
        *count = s->host_count;
        return s->host_bytes;
    }
    if (which == 'o') {
        *count = s->gc_obj_count;
        return s->gc_obj_bytes;
    }
    *count = s->gc_dev_count + s->gc_host_count;
    return s->gc_dev_bytes + s->gc_host_bytes;
}

/* What a table is ordered by: bytes, but objects by their count. */
static uint64_t figure(const rpt_site *s, int which)
{
    uint64_t count, bytes = rpt_site_figure(s, which, &count);
    return which == 'o' ? count : bytes;
}

static int by_figure(const void *a, const void *b, void *arg)
{
    const sort_ctx *c = arg;
    uint64_t fa = figure(&c->r->sites[*(const uint32_t *)a], c->which);
    uint64_t fb = figure(&c->r->sites[*(const uint32_t *)b], c->which);
    if (fa != fb)
        return fa < fb ? 1 : -1;
    if (c->which == 'o') {   /* then by bytes */
        uint64_t count, ba = rpt_site_figure(&c->r->sites[*(const uint32_t *)a], 'o', &count);
        uint64_t bb = rpt_site_figure(&c->r->sites[*(const uint32_t *)b], 'o', &count);
        if (ba != bb)
            return ba < bb ? 1 : -1;
    }
    /* Ties in order of first appearance: the same log gives the same table. */
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

uint32_t *rpt_sites_by(const rpt *r, int which, uint32_t *n)
{
    uint32_t *idx = rp_xmalloc((r->nsites + 1) * sizeof *idx);
    *n = 0;
    for (uint32_t i = 0; i < r->nsites; i++)
        if (figure(&r->sites[i], which))
            idx[(*n)++] = i;
    sort_ctx c = {r, which};
    qsort_r(idx, *n, sizeof *idx, by_figure, &c);
    return idx;
}

void rpt_verdict(const rpt *r, rp_verdict *v)
{
    char source[128];
    const rp_result *m = r->model;
    rp_verdict_facts f = {.model = r->model_name ? r->model_name : "none", .damage = r->damage, .source = source,
                          .pool_unwatched = rp_verdict_pool_unwatched(r->reader)};
    if (m) {
        f.ops = m->ops;
        f.matched = m->matched;
        f.diverged = m->diverged;
        f.first_diverged_seq = m->first_diverged_seq;
        f.diverged_before = m->violated ? m->diverged_before_violation : m->diverged;
        f.ambiguous = m->ambiguous;
        f.unplaced = m->unplaced;
        f.first_unplaced_seq = m->first_unplaced_seq;
    }
    f.no_native_stacks = rp_verdict_no_native_stacks(r->reader);
    if (m && m->violated && m->by_model) {
        f.violation = &m->violation;
        f.by_model = 1;
        snprintf(source, sizeof source, "pool model, --model %s", f.model);
    } else if (r->total_violations) {
        f.violation = &r->violations[0];
        snprintf(source, sizeof source, "model-free checks");
    }
    rp_verdict_make(v, &f);
}
