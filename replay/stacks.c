/* stacks.c - resolve stack ids through the reader. */
#include "stacks.h"

#include <stdlib.h>
#include <string.h>

#include "ptrmap.h"
#include "symbolize.h"
#include "xalloc.h"

struct rp_stacks {
    const tf_reader *reader;
    sym_ctx *sym;               /* offline symbolisation (tracesym) */
    rp_ptrmap has;              /* (stack, key hash) -> 1 + answer */
};

rp_stacks *rp_stacks_new(const tf_reader *reader, const char *const *debug_dirs, int ndirs)
{
    rp_stacks *s = rp_xcalloc(1, sizeof *s);
    s->reader = reader;
    s->sym = sym_new(debug_dirs, ndirs);
    rp_ptrmap_init(&s->has);
    return s;
}

void rp_stacks_use_reader(rp_stacks *s, const tf_reader *reader)
{
    s->reader = reader;
}

void rp_stacks_free(rp_stacks *s)
{
    if (!s)
        return;
    if (s->sym)
        sym_free(s->sym);
    rp_ptrmap_free(&s->has);
    free(s);
}

uint32_t rp_stacks_native(rp_stacks *s, uint32_t id, rp_native_frame *out, uint32_t max)
{
    const uint64_t *ips;
    uint32_t n;
    if (!s->reader || !id || !tf_reader_native_stack(s->reader, id, &ips, &n))
        return 0;
    if (n > max)
        n = max;
    for (uint32_t i = 0; i < n; i++) {
        rp_native_frame *f = &out[i];
        memset(f, 0, sizeof *f);
        f->ip = ips[i];
        const tf_module *m = tf_reader_module_for(s->reader, ips[i]);
        if (!m)
            continue;
        f->module = m->path;
        f->offset = ips[i] - m->base;
        /* Outer frames hold return addresses: look up the call itself. */
        sym_info info;
        if (s->sym && sym_lookup(s->sym, m, i ? ips[i] - 1 : ips[i], &info)) {
            f->function = info.function;
            f->file = info.file;
            f->line = info.line > 0 ? (uint32_t)info.line : 0;
        }
    }
    return n;
}

uint32_t rp_stacks_py(rp_stacks *s, uint32_t id, rp_py_frame *out, uint32_t max)
{
    const tf_py_frame *frames;
    uint32_t n;
    if (!s->reader || !id || !tf_reader_py_stack(s->reader, id, &frames, &n))
        return 0;
    if (n > max)
        n = max;
    for (uint32_t i = 0; i < n; i++) {
        const tf_py_code *c = tf_reader_py_code(s->reader, frames[i].code);
        out[i].file = c ? tf_reader_string(s->reader, c->file, NULL) : NULL;
        out[i].function = c ? tf_reader_string(s->reader, c->function, NULL) : NULL;
        out[i].line = frames[i].line;
    }
    return n;
}

static int contains_lower(const char *name, const char *key)
{
    char low[256];
    size_t n = 0;
    for (; name[n] && n + 1 < sizeof low; n++)
        low[n] = (char)(name[n] >= 'A' && name[n] <= 'Z' ? name[n] - 'A' + 'a' : name[n]);
    low[n] = 0;
    return strstr(low, key) != NULL;
}

int rp_stacks_has_function(rp_stacks *s, uint32_t id, const char *key)
{
    uint32_t h = 2166136261u;
    for (const char *k = key; *k; k++)
        h = (h ^ (uint8_t)*k) * 16777619u;
    uint64_t ck = (uint64_t)id << 32 | h;
    uint64_t *v = rp_ptrmap_get(&s->has, ck);
    if (v)
        return (int)*v - 1;
    rp_native_frame f[64];
    uint32_t n = rp_stacks_native(s, id, f, 64);
    int found = 0;
    for (uint32_t i = 0; i < n && !found; i++)
        found = f[i].function && contains_lower(f[i].function, key);
    rp_ptrmap_put(&s->has, ck, (uint64_t)found + 1);
    return found;
}
