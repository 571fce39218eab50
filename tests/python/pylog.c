/*
 * pylog - prints what the Python tests assert on: every event of a log as one
 * JSON line (kind, nesting, the kind's fields, native stack depth and the
 * Python stack resolved to file/line/function), then one line with the INFO
 * records.  Linked to traceformat, so the tests do not depend on the output
 * format of trace-dump.
 */
#include "trace_format.h"

#include <stdio.h>
#include <string.h>

static void put_json_string(const char *s)
{
    putchar('"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static const char *string_of(tf_reader *r, uint32_t id)
{
    size_t len;
    const char *s = id ? tf_reader_string(r, id, &len) : NULL;
    return s ? s : "";
}

static void put_py_stack(tf_reader *r, uint32_t id)
{
    const tf_py_frame *frames;
    uint32_t n = 0;
    printf(",\"py\":[");
    if (id && tf_reader_py_stack(r, id, &frames, &n)) {
        for (uint32_t i = 0; i < n; i++) {
            const tf_py_code *code = tf_reader_py_code(r, frames[i].code);
            printf(i ? ",[" : "[");
            put_json_string(code ? string_of(r, code->file) : "?");
            printf(",%u,", frames[i].line);
            put_json_string(code ? string_of(r, code->function) : "?");
            putchar(']');
        }
    }
    putchar(']');
}

static void put_event(tf_reader *r, const tf_event *e)
{
    const char *kind = tf_kind_name(e->kind);
    printf("{\"seq\":%llu,\"tid\":%u,\"t_ns\":%llu,\"parent\":%llu,\"kind\":\"%s\"",
           (unsigned long long)e->seq, e->tid, (unsigned long long)e->t_ns, (unsigned long long)e->parent,
           kind ? kind : "?");
    switch (e->kind) {
    case TF_EV_GC_START:
    case TF_EV_GC_STOP:
        printf(",\"generation\":%d,\"collected\":%llu,\"uncollectable\":%llu,"
               "\"duration_ns\":%llu,\"allocs\":[%llu,%llu,%llu]",
               e->u.gc.generation, (unsigned long long)e->u.gc.collected,
               (unsigned long long)e->u.gc.uncollectable,
               (unsigned long long)e->u.gc.duration_ns,
               (unsigned long long)e->u.gc.allocs[0], (unsigned long long)e->u.gc.allocs[1],
               (unsigned long long)e->u.gc.allocs[2]);
        printf(",\"interp\":%llu", (unsigned long long)e->u.gc.interp);
        break;
    case TF_EV_HOST_ALLOC:
    case TF_EV_HOST_FREE:
    case TF_EV_PY_ALLOC:
        printf(",\"domain\":%u,\"ptr\":%llu,\"size\":%llu,\"api\":\"%s\"", e->u.host.domain,
               (unsigned long long)e->u.host.ptr, (unsigned long long)e->u.host.size,
               tf_host_api_name(e->u.host.api));
        break;

    case TF_EV_PY_FREE:
        printf(",\"domain\":%u,\"ptr\":%llu", e->u.host.domain, (unsigned long long)e->u.host.ptr);
        break;
    case TF_EV_PY_DOUBLE_INIT:
        printf(",\"obj\":%llu,\"type\":", (unsigned long long)e->u.double_init.obj);
        put_json_string(string_of(r, e->u.double_init.type_name));
        break;
    case TF_EV_POOL_ALLOC:
    case TF_EV_POOL_FREE:
        printf(",\"pool\":%u,\"ptr\":%llu,\"requested\":%llu,\"granted\":%llu,\"stream\":%llu", e->u.pool.pool,
               (unsigned long long)e->u.pool.ptr, (unsigned long long)e->u.pool.requested,
               (unsigned long long)e->u.pool.granted, (unsigned long long)e->u.pool.stream);
        break;
    case TF_EV_POOL_OP_BEGIN:
    case TF_EV_POOL_OP_END:
        printf(",\"pool\":%u,\"op\":%u,\"begin\":%llu,\"arg\":%llu", e->u.pool_op.pool,
               e->u.pool_op.op, (unsigned long long)e->u.pool_op.begin,
               (unsigned long long)e->u.pool_op.arg);
        break;
    case TF_EV_MARK:
        printf(",\"text\":");
        put_json_string(string_of(r, e->u.mark.text));
        break;
    default:
        break;
    }
    const uint64_t *ips;
    uint32_t depth = 0;
    if (e->native_stack)
        tf_reader_native_stack(r, e->native_stack, &ips, &depth);
    printf(",\"native_depth\":%u", depth);
    put_py_stack(r, e->py_stack);
    printf("}\n");
}

static void put_infos_and_pools(tf_reader *r)
{
    printf("{\"kind\":\"infos\",\"infos\":[");
    for (uint32_t i = 0; i < tf_reader_info_count(r); i++) {
        const char *key, *value;
        tf_reader_info(r, i, &key, &value);
        printf(i ? ",[" : "[");
        put_json_string(key);
        putchar(',');
        put_json_string(value);
        putchar(']');
    }
    printf("],\"pools\":{");
    for (uint32_t i = 0; i < tf_reader_pool_count(r); i++) {
        uint32_t pool;
        const char *name;
        tf_reader_pool_at(r, i, &pool, &name);
        printf(i ? ",\"%u\":" : "\"%u\":", pool);
        put_json_string(name);
    }
    printf("},\"header_python\":");
    const char *hp = tf_reader_header(r)->python_version;
    put_json_string(hp ? hp : "");
    printf(",\"clean_end\":%d}\n", tf_reader_status(r)->clean_end);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: pylog LOG\n");
        return 2;
    }
    char err[256];
    tf_reader *r = tf_reader_open(argv[1], err, sizeof err);
    if (!r) {
        fprintf(stderr, "pylog: %s\n", err);
        return 1;
    }
    tf_event e;
    while (tf_reader_next(r, &e))
        put_event(r, &e);
    put_infos_and_pools(r);
    tf_reader_close(r);
    return 0;
}
