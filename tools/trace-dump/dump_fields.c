/*
 * dump_fields.c - the fields of each event kind, by name, for trace-dump's
 * text and JSON forms alike.  Names are tf_event's; string ids are shown as
 * their text, API numbers as the entry point's name.
 */
#include <string.h>

#include "dump.h"

static void string_id(dump_ctx *d, const dump_sink *k, const char *key, uint32_t id)
{
    size_t len;
    const char *s = tf_reader_string(d->r, id, &len);
    k->s(d, key, s, len);
}

void dump_kind_fields(dump_ctx *d, const tf_event *e, const dump_sink *k)
{
    const char *api;
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC: case TF_EV_CUDA_FREE:
        api = tf_api_name(e->u.cuda.api);
        k->s(d, "api", api, strlen(api));
        k->i(d, "device", e->u.cuda.device);
        k->i(d, "result", e->u.cuda.result);
        k->u(d, "flags", e->u.cuda.flags, 0);
        k->u(d, "ptr", e->u.cuda.ptr, 1);
        k->u(d, "size", e->u.cuda.size, 0);
        k->u(d, "stream", e->u.cuda.stream, 1);
        break;
    case TF_EV_POOL_ALLOC: case TF_EV_POOL_FREE:
        k->u(d, "pool", e->u.pool.pool, 0);
        k->u(d, "ptr", e->u.pool.ptr, 1);
        k->u(d, "requested", e->u.pool.requested, 0);
        k->u(d, "granted", e->u.pool.granted, 0);
        k->u(d, "stream", e->u.pool.stream, 1);
        break;
    case TF_EV_POOL_OP_BEGIN: case TF_EV_POOL_OP_END:
        k->u(d, "pool", e->u.pool_op.pool, 0);
        k->u(d, "op", e->u.pool_op.op, 0);
        k->u(d, "begin", e->u.pool_op.begin, 0);
        k->u(d, "arg", e->u.pool_op.arg, 0);
        break;
    case TF_EV_POOL_SEGMENT:
        k->u(d, "pool", e->u.segment.pool, 0);
        k->u(d, "grow", e->u.segment.grow, 0);
        k->u(d, "ptr", e->u.segment.ptr, 1);
        k->u(d, "size", e->u.segment.size, 0);
        break;
    case TF_EV_GC_START: case TF_EV_GC_STOP:
        k->i(d, "generation", e->u.gc.generation);
        k->u(d, "collected", e->u.gc.collected, 0);
        k->u(d, "uncollectable", e->u.gc.uncollectable, 0);
        k->u(d, "duration_ns", e->u.gc.duration_ns, 0);
        k->u3(d, "allocs", e->u.gc.allocs);
        k->u(d, "interp", e->u.gc.interp, 0);
        break;
    case TF_EV_HOST_ALLOC: case TF_EV_HOST_FREE: case TF_EV_PY_ALLOC:
        k->u(d, "domain", e->u.host.domain, 0);
        k->u(d, "ptr", e->u.host.ptr, 1);
        k->u(d, "size", e->u.host.size, 0);
        api = tf_host_api_name(e->u.host.api);
        k->s(d, "api", api, strlen(api));
        break;
    case TF_EV_PY_FREE:
        k->u(d, "ptr", e->u.host.ptr, 1);
        k->u(d, "domain", e->u.host.domain, 0);
        break;
    case TF_EV_PY_DOUBLE_INIT:
        k->u(d, "obj", e->u.double_init.obj, 1);
        string_id(d, k, "type_name", e->u.double_init.type_name);
        break;
    case TF_EV_MARK:
        string_id(d, k, "text", e->u.mark.text);
        break;
    case TF_EV_RELEASE_FAILED:
        k->u(d, "release", e->u.release_failed.release, 0);
        k->i(d, "result", e->u.release_failed.result);
        break;
    case TF_EV_END:
        k->u(d, "events", e->u.end.events, 0);
        k->u(d, "strings", e->u.end.strings, 0);
        k->u(d, "native_stacks", e->u.end.native_stacks, 0);
        k->u(d, "py_stacks", e->u.end.py_stacks, 0);
        k->u(d, "frames", e->u.end.frames, 0);
        break;
    }
}
