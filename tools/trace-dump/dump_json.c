/*
 * dump_json.c - one JSON object per line: the header first ("kind":"header"),
 * then each event with its common fields, its kind's own fields (named as in
 * tf_event), and its stacks resolved (FORMAT.md section 11, "trace-dump --json").
 */
#include <stdlib.h>
#include <string.h>

#include "dump.h"

void dump_json_header(dump_ctx *d)
{
    const tf_header *h = tf_reader_header(d->r);
    rn_json *j = &d->j;
    rn_json_obj(j, NULL);
    rn_json_str(j, "kind", "header");
    rn_json_u64(j, "version_major", h->version_major);
    rn_json_u64(j, "version_minor", h->version_minor);
    rn_json_u64(j, "pid", h->pid);
    rn_json_u64(j, "ppid", h->ppid);
    rn_json_u64(j, "wall_start_ns", h->wall_start_ns);
    rn_json_u64(j, "mono_start_ns", h->mono_start_ns);
    rn_json_str(j, "hostname", h->hostname ? h->hostname : "");
    rn_json_str(j, "cmdline", h->cmdline ? h->cmdline : "");
    rn_json_str(j, "exe", h->exe ? h->exe : "");
    rn_json_str(j, "tracer_version", h->tracer_version ? h->tracer_version : "");
    rn_json_str(j, "settings", h->settings ? h->settings : "");
    rn_json_str(j, "python_version", h->python_version ? h->python_version : "");
    rn_json_i64(j, "cuda_runtime_version", h->cuda_runtime_version);
    rn_json_i64(j, "cuda_driver_version", h->cuda_driver_version);
    rn_json_u64(j, "max_bytes", h->max_bytes);
    rn_json_u64(j, "segment", h->segment);
    rn_json_u64(j, "first_seq", h->first_seq);
    rn_json_end_obj(j);
}

/* file_differs: the file this machine has at the module's path is another
 * build (rn_stacks_module_differs), so its frames stay module+offset; said
 * here because the frames cannot say why (the report says it too). */
static void module_line(dump_ctx *d, const tf_module *m)
{
    rn_json *j = &d->j;
    static const char hex[] = "0123456789abcdef";
    char *id = malloc(2 * (size_t)m->build_id_len + 1);
    if (!id) {
        fprintf(stderr, "trace-dump: out of memory\n");
        exit(2);
    }
    for (uint32_t i = 0; i < m->build_id_len; i++) {
        id[2 * i] = hex[m->build_id[i] >> 4];
        id[2 * i + 1] = hex[m->build_id[i] & 15];
    }
    id[2 * (size_t)m->build_id_len] = '\0';
    rn_json_obj(j, NULL);
    rn_json_str(j, "kind", "module");
    rn_json_u64(j, "id", m->id);
    rn_json_str(j, "path", m->path ? m->path : "");
    rn_json_u64(j, "base", m->base);
    rn_json_str(j, "build_id", id);
    rn_json_str(j, "file_differs", rn_stacks_module_differs(d->stacks, m));
    rn_json_arr(j, "segments");
    for (uint32_t i = 0; i < m->nsegments; i++) {
        rn_json_obj(j, NULL);
        rn_json_u64(j, "vaddr", m->segments[i].vaddr);
        rn_json_u64(j, "memsz", m->segments[i].memsz);
        rn_json_u64(j, "flags", m->segments[i].flags);
        rn_json_end_obj(j);
    }
    rn_json_end_arr(j);
    rn_json_end_obj(j);
    free(id);
}

/* py_name: a thread's Python name (threading.Thread.name), shown when set. */
static void named(rn_json *j, const char *kind, const char *key, uint32_t id, const char *name, const char *py_name)
{
    rn_json_obj(j, NULL);
    rn_json_str(j, "kind", kind);
    rn_json_u64(j, key, id);
    rn_json_str(j, "name", name ? name : "");
    if (py_name && *py_name)
        rn_json_str(j, "py_name", py_name);
    rn_json_end_obj(j);
}

/* Thread i's line, when its names differ from those last printed for it
 * (a thread's Python name usually comes after its first events, and
 * `import` must get it).  A renamed pool keeps its first name. */
static void thread_line(dump_ctx *d, uint32_t i)
{
    uint32_t id;
    const char *name;
    tf_reader_thread_at(d->r, i, &id, &name);
    const char *py = tf_reader_thread_py_name(d->r, id);
    if (i >= d->json_thread_cap) {
        uint32_t cap = d->json_thread_cap ? d->json_thread_cap * 2 : 64;
        while (cap <= i)
            cap *= 2;
        const char **a = realloc(d->json_thread_name, cap * sizeof *a);
        const char **b = a ? realloc(d->json_thread_py, cap * sizeof *b) : NULL;
        if (a)
            d->json_thread_name = a;
        if (!b) {
            named(&d->j, "thread", "tid", id, name, py);   /* no memory to remember: print */
            return;
        }
        d->json_thread_py = b;
        d->json_thread_cap = cap;
    } else if (i < d->json_threads && d->json_thread_name[i] == name && d->json_thread_py[i] == py) {
        return;
    }
    named(&d->j, "thread", "tid", id, name, py);
    d->json_thread_name[i] = name;
    d->json_thread_py[i] = py;
}

void dump_json_definitions(dump_ctx *d)
{
    rn_json *j = &d->j;
    uint32_t id;
    const char *name, *key, *value;
    for (; d->json_pools < tf_reader_pool_count(d->r); d->json_pools++) {
        tf_reader_pool_at(d->r, d->json_pools, &id, &name);
        named(j, "pool", "pool", id, name, NULL);
    }
    uint64_t renames = tf_reader_thread_renames(d->r);
    if (renames != d->json_renames) {
        d->json_renames = renames;
        for (uint32_t i = 0; i < d->json_threads; i++)
            thread_line(d, i);
    }
    for (; d->json_threads < tf_reader_thread_count(d->r); d->json_threads++)
        thread_line(d, d->json_threads);
    for (; d->json_infos < tf_reader_info_count(d->r); d->json_infos++) {
        tf_reader_info(d->r, d->json_infos, &key, &value);
        rn_json_obj(j, NULL);
        rn_json_str(j, "kind", "info");
        rn_json_str(j, "key", key ? key : "");
        rn_json_str(j, "value", value ? value : "");
        rn_json_end_obj(j);
    }
    for (; d->json_modules < tf_reader_module_count(d->r); d->json_modules++)
        module_line(d, tf_reader_module_at(d->r, d->json_modules));
    for (; d->json_unloads < tf_reader_unload_count(d->r); d->json_unloads++) {
        rn_json_obj(j, NULL);
        rn_json_str(j, "kind", "module_unload");
        rn_json_u64(j, "id", tf_reader_unload_at(d->r, d->json_unloads));
        rn_json_end_obj(j);
    }
}

static void sink_u(dump_ctx *d, const char *key, uint64_t v, int is_address)
{
    (void)is_address;
    rn_json_u64(&d->j, key, v);
}

static void sink_i(dump_ctx *d, const char *key, int64_t v)
{
    rn_json_i64(&d->j, key, v);
}

static void sink_s(dump_ctx *d, const char *key, const char *s, size_t n)
{
    rn_json_strn(&d->j, key, s, n);
}

static void sink_u3(dump_ctx *d, const char *key, const uint64_t v[3])
{
    rn_json_arr(&d->j, key);
    for (int i = 0; i < 3; i++)
        rn_json_u64(&d->j, NULL, v[i]);
    rn_json_end_arr(&d->j);
}

static const dump_sink json_sink = { sink_u, sink_i, sink_s, sink_u3 };

void dump_json_event(dump_ctx *d, const tf_event *e)
{
    rn_json *j = &d->j;
    const char *kind = tf_kind_name(e->kind);
    dump_json_definitions(d);
    rn_json_obj(j, NULL);
    rn_json_u64(j, "seq", e->seq);
    rn_json_u64(j, "tid", e->tid);
    rn_json_u64(j, "t_ns", e->t_ns);
    rn_json_str(j, "kind", kind ? kind : "unknown");
    rn_json_u64(j, "parent", e->parent);
    dump_kind_fields(d, e, &json_sink);
    rn_json_stacks(j, d->stacks, e->native_stack, e->py_stack);
    rn_json_end_obj(j);
}
