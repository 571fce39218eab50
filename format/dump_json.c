/*
 * dump_json.c - one JSON object per line: the header first ("kind":"header"),
 * then each event with its common fields, its kind's own fields (named as in
 * tf_event), and its stacks resolved (FORMAT.md, "trace-dump --json").
 */
#include <inttypes.h>
#include <string.h>

#include "dump.h"

/* JSON string; bytes that are not valid UTF-8 become U+FFFD. */
static int utf8_len(const unsigned char *s, size_t left)
{
    int n = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    if (n == 0 || (size_t)n > left)
        return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

static void put_str(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else if (c < 0x80) {
            fputc(c, f);
        } else {
            int len = utf8_len(p + i, n - i);
            if (len) {
                fwrite(p + i, 1, (size_t)len, f);
                i += (size_t)len - 1;
            } else {
                fputs("\\ufffd", f);
            }
        }
    }
    fputc('"', f);
}

static void put_cstr(FILE *f, const char *s)
{
    put_str(f, s ? s : "", s ? strlen(s) : 0);
}

static void key_str(FILE *f, const char *key, const char *s)
{
    fprintf(f, ",\"%s\":", key);
    put_cstr(f, s);
}

static void key_u(FILE *f, const char *key, uint64_t v)
{
    fprintf(f, ",\"%s\":%" PRIu64, key, v);
}

static void key_i(FILE *f, const char *key, int64_t v)
{
    fprintf(f, ",\"%s\":%" PRId64, key, v);
}

void dump_json_header(dump_ctx *d)
{
    const tf_header *h = tf_reader_header(d->r);
    FILE *f = d->out;
    fputs("{\"kind\":\"header\"", f);
    key_u(f, "version_major", h->version_major);
    key_u(f, "version_minor", h->version_minor);
    key_u(f, "pid", h->pid);
    key_u(f, "ppid", h->ppid);
    key_u(f, "wall_start_ns", h->wall_start_ns);
    key_u(f, "mono_start_ns", h->mono_start_ns);
    key_str(f, "hostname", h->hostname);
    key_str(f, "cmdline", h->cmdline);
    key_str(f, "exe", h->exe);
    key_str(f, "tracer_version", h->tracer_version);
    key_str(f, "settings", h->settings);
    key_str(f, "python_version", h->python_version);
    key_i(f, "cuda_runtime_version", h->cuda_runtime_version);
    key_i(f, "cuda_driver_version", h->cuda_driver_version);
    fputs("}\n", f);
}

static void module_line(FILE *f, const tf_module *m)
{
    fputs("{\"kind\":\"module\"", f);
    key_u(f, "id", m->id);
    key_str(f, "path", m->path);
    key_u(f, "base", m->base);
    fputs(",\"build_id\":\"", f);
    for (uint32_t i = 0; i < m->build_id_len; i++)
        fprintf(f, "%02x", m->build_id[i]);
    fputs("\",\"segments\":[", f);
    for (uint32_t i = 0; i < m->nsegments; i++)
        fprintf(f, "%s{\"vaddr\":%" PRIu64 ",\"memsz\":%" PRIu64 ",\"flags\":%" PRIu32 "}", i ? "," : "",
                m->segments[i].vaddr, m->segments[i].memsz, m->segments[i].flags);
    fputs("]}\n", f);
}

/* A renamed thread or pool keeps its place in the reader's lists, so only
 * first names are printed. */
void dump_json_definitions(dump_ctx *d)
{
    FILE *f = d->out;
    uint32_t id;
    const char *name, *key, *value;
    for (; d->json_pools < tf_reader_pool_count(d->r); d->json_pools++) {
        tf_reader_pool_at(d->r, d->json_pools, &id, &name);
        fprintf(f, "{\"kind\":\"pool\",\"pool\":%" PRIu32, id);
        key_str(f, "name", name);
        fputs("}\n", f);
    }
    for (; d->json_threads < tf_reader_thread_count(d->r); d->json_threads++) {
        tf_reader_thread_at(d->r, d->json_threads, &id, &name);
        fprintf(f, "{\"kind\":\"thread\",\"tid\":%" PRIu32, id);
        key_str(f, "name", name);
        const char *py_name = tf_reader_thread_py_name(d->r, id);
        if (*py_name)
            key_str(f, "py_name", py_name);
        fputs("}\n", f);
    }
    for (; d->json_infos < tf_reader_info_count(d->r); d->json_infos++) {
        tf_reader_info(d->r, d->json_infos, &key, &value);
        fputs("{\"kind\":\"info\"", f);
        key_str(f, "key", key);
        key_str(f, "value", value);
        fputs("}\n", f);
    }
    for (; d->json_modules < tf_reader_module_count(d->r); d->json_modules++)
        module_line(f, tf_reader_module_at(d->r, d->json_modules));
    for (; d->json_unloads < tf_reader_unload_count(d->r); d->json_unloads++)
        fprintf(f, "{\"kind\":\"module_unload\",\"id\":%" PRIu32 "}\n",
                tf_reader_unload_at(d->r, d->json_unloads));
}

static void sink_u(dump_ctx *d, const char *key, uint64_t v, int is_address)
{
    (void)is_address;
    key_u(d->out, key, v);
}

static void sink_i(dump_ctx *d, const char *key, int64_t v)
{
    key_i(d->out, key, v);
}

static void sink_s(dump_ctx *d, const char *key, const char *s, size_t n)
{
    fprintf(d->out, ",\"%s\":", key);
    if (s)
        put_str(d->out, s, n);
    else
        fputs("null", d->out);
}

static void sink_u3(dump_ctx *d, const char *key, const uint64_t v[3])
{
    fprintf(d->out, ",\"%s\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", key, v[0], v[1], v[2]);
}

static const dump_sink json_sink = { sink_u, sink_i, sink_s, sink_u3 };

static void native_frame(dump_ctx *d, uint64_t ip, uint32_t i)
{
    FILE *f = d->out;
    const tf_module *m = tf_reader_module_for(d->r, ip);
    fprintf(f, "%s{\"ip\":%" PRIu64, i ? "," : "", ip);
    if (m) {
        key_str(f, "module", m->path);
        key_u(f, "offset", ip - m->base);
        const sym_info *si = dump_symbol(d, m, ip, i);
        if (si->function)
            key_str(f, "function", si->function);
        if (si->file) {
            key_str(f, "file", si->file);
            key_u(f, "line", (uint64_t)si->line);
        }
    }
    fputc('}', f);
}

static void native_stack(dump_ctx *d, uint32_t id)
{
    const uint64_t *ips;
    uint32_t n;
    if (!id || !tf_reader_native_stack(d->r, id, &ips, &n))
        return;
    fputs(",\"native_stack\":[", d->out);
    for (uint32_t i = 0; i < n; i++)
        native_frame(d, ips[i], i);
    fputc(']', d->out);
}

static void py_stack(dump_ctx *d, uint32_t id)
{
    const tf_py_frame *frames;
    uint32_t n;
    if (!id || !tf_reader_py_stack(d->r, id, &frames, &n))
        return;
    FILE *f = d->out;
    fputs(",\"py_stack\":[", f);
    for (uint32_t i = 0; i < n; i++) {
        const tf_py_code *code = tf_reader_py_code(d->r, frames[i].code);
        fputs(i ? ",{" : "{", f);
        fputs("\"file\":", f);
        put_cstr(f, code ? tf_reader_string(d->r, code->file, NULL) : NULL);
        key_u(f, "line", frames[i].line);
        key_str(f, "function", code ? tf_reader_string(d->r, code->function, NULL) : NULL);
        fputc('}', f);
    }
    fputc(']', f);
}

void dump_json_event(dump_ctx *d, const tf_event *e)
{
    FILE *f = d->out;
    const char *kind = tf_kind_name(e->kind);
    dump_json_definitions(d);
    fprintf(f, "{\"seq\":%" PRIu64, e->seq);
    key_u(f, "tid", e->tid);
    key_u(f, "t_ns", e->t_ns);
    key_str(f, "kind", kind ? kind : "unknown");
    key_u(f, "parent", e->parent);
    dump_kind_fields(d, e, &json_sink);
    native_stack(d, e->native_stack);
    py_stack(d, e->py_stack);
    fputs("}\n", f);
}
