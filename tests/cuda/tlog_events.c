/*
 * tlog_events.c - a log as JSON lines, for the test drivers: the header,
 * every event (with its stack's innermost module), the modules, the INFO
 * records and the read status.
 */
#include "trace_format.h"

#include <stdio.h>
#include <string.h>

static void json_string(const char *s)
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

static void print_header(const tf_header *h)
{
    printf("{\"type\":\"header\",\"pid\":%u,\"ppid\":%u,\"mono_start\":%llu,\"exe\":", h->pid,
           h->ppid, (unsigned long long)h->mono_start_ns);
    json_string(h->exe);
    printf(",\"cmdline\":");
    json_string(h->cmdline);
    printf(",\"settings\":");
    json_string(h->settings);
    printf(",\"hostname\":");
    json_string(h->hostname);
    printf(",\"tracer\":");
    json_string(h->tracer_version);
    printf(",\"version_minor\":%u}\n", h->version_minor);
}

/* Path of the module holding the innermost frame of a stack, and depth. */
static void print_stack(const tf_reader *r, uint32_t id)
{
    const uint64_t *ips;
    uint32_t n = 0;
    if (!id || !tf_reader_native_stack(r, id, &ips, &n) || n == 0) {
        printf(",\"depth\":0,\"top\":\"\"");
        return;
    }
    const tf_module *m = tf_reader_module_for(r, ips[0]);
    printf(",\"depth\":%u,\"top\":", n);
    json_string(m ? m->path : "");
}

static void print_event(const tf_reader *r, const tf_event *e)
{
    printf("{\"type\":\"event\",\"seq\":%llu,\"kind\":", (unsigned long long)e->seq);
    json_string(tf_kind_name(e->kind));
    printf(",\"tid\":%u,\"t\":%llu,\"parent\":%llu,\"py_stack\":%u", e->tid,
           (unsigned long long)e->t_ns, (unsigned long long)e->parent, e->py_stack);
    print_stack(r, e->native_stack);
    /* The thread's names as the log has them at this point. */
    printf(",\"thread\":");
    json_string(tf_reader_thread_name(r, e->tid));
    printf(",\"py_thread\":");
    json_string(tf_reader_thread_py_name(r, e->tid));
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC:
    case TF_EV_CUDA_FREE:
        printf(",\"api\":\"%s\",\"device\":%d,\"result\":%d,\"flags\":%u,\"ptr\":%llu,"
               "\"size\":%llu,\"stream\":%llu",
               tf_api_name(e->u.cuda.api), e->u.cuda.device, e->u.cuda.result, e->u.cuda.flags,
               (unsigned long long)e->u.cuda.ptr, (unsigned long long)e->u.cuda.size,
               (unsigned long long)e->u.cuda.stream);
        break;
    case TF_EV_POOL_ALLOC:
    case TF_EV_POOL_FREE:
        printf(",\"pool\":%u,\"ptr\":%llu,\"requested\":%llu,\"granted\":%llu,\"stream\":%llu",
               e->u.pool.pool, (unsigned long long)e->u.pool.ptr,
               (unsigned long long)e->u.pool.requested, (unsigned long long)e->u.pool.granted,
               (unsigned long long)e->u.pool.stream);
        break;
    case TF_EV_POOL_OP_BEGIN:
    case TF_EV_POOL_OP_END:
        printf(",\"pool\":%u,\"op\":%u,\"begin\":%llu,\"arg\":%llu", e->u.pool_op.pool,
               e->u.pool_op.op, (unsigned long long)e->u.pool_op.begin,
               (unsigned long long)e->u.pool_op.arg);
        break;
    case TF_EV_POOL_SEGMENT:
        printf(",\"pool\":%u,\"grow\":%u,\"ptr\":%llu,\"size\":%llu", e->u.segment.pool,
               e->u.segment.grow, (unsigned long long)e->u.segment.ptr,
               (unsigned long long)e->u.segment.size);
        break;
    case TF_EV_MARK:
        printf(",\"text\":");
        json_string(tf_reader_string(r, e->u.mark.text, NULL));
        break;
    case TF_EV_RELEASE_FAILED:
        printf(",\"release\":%llu,\"result\":%d", (unsigned long long)e->u.release_failed.release,
               e->u.release_failed.result);
        break;
    case TF_EV_HOST_ALLOC:
    case TF_EV_HOST_FREE:
        printf(",\"domain\":%u,\"ptr\":%llu,\"size\":%llu", e->u.host.domain,
               (unsigned long long)e->u.host.ptr, (unsigned long long)e->u.host.size);
        break;
    }
    printf("}\n");
}

static void print_tail(const tf_reader *r)
{
    for (uint32_t i = 0; i < tf_reader_module_count(r); i++) {
        const tf_module *m = tf_reader_module_at(r, i);
        /* Still loaded at the end of the log when its first segment's
         * address resolves to it. */
        int loaded = m->nsegments && tf_reader_module_for(r, m->base + m->segments[0].vaddr) == m;
        printf("{\"type\":\"module\",\"id\":%u,\"base\":%llu,\"build_id_len\":%u,\"segments\":%u,"
               "\"loaded\":%d,\"path\":",
               m->id, (unsigned long long)m->base, m->build_id_len, m->nsegments, loaded);
        json_string(m->path);
        printf("}\n");
    }
    for (uint32_t i = 0; i < tf_reader_info_count(r); i++) {
        const char *key, *value;
        if (!tf_reader_info(r, i, &key, &value))
            continue;
        printf("{\"type\":\"info\",\"key\":");
        json_string(key);
        printf(",\"value\":");
        json_string(value);
        printf("}\n");
    }
    for (uint32_t i = 0; i < tf_reader_thread_count(r); i++) {
        uint32_t tid;
        const char *name;
        if (!tf_reader_thread_at(r, i, &tid, &name))
            continue;
        printf("{\"type\":\"thread\",\"tid\":%u,\"name\":", tid);
        json_string(name);
        printf(",\"py_name\":");
        json_string(tf_reader_thread_py_name(r, tid));
        printf("}\n");
    }
    for (uint32_t i = 0; i < tf_reader_pool_count(r); i++) {
        uint32_t pool;
        const char *name;
        if (!tf_reader_pool_at(r, i, &pool, &name))
            continue;
        printf("{\"type\":\"pool\",\"pool\":%u,\"name\":", pool);
        json_string(name);
        printf("}\n");
    }
    const tf_read_status *s = tf_reader_status(r);
    printf("{\"type\":\"status\",\"events\":%llu,\"frames\":%llu,\"corrupt\":%llu,"
           "\"clean_end\":%d,\"truncated\":%d,\"last_seq\":%llu,\"column_blocks\":%llu,"
           "\"seq_gaps\":%llu}\n",
           (unsigned long long)s->events, (unsigned long long)s->frames,
           (unsigned long long)s->corrupt_frames, s->clean_end, s->truncated,
           (unsigned long long)s->last_seq, (unsigned long long)s->column_blocks,
           (unsigned long long)s->seq_gaps);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s LOG\n", argv[0]);
        return 2;
    }
    char err[256];
    tf_reader *r = tf_reader_open(argv[1], err, sizeof err);
    if (!r) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 1;
    }
    print_header(tf_reader_header(r));
    tf_event e;
    while (tf_reader_next(r, &e))
        print_event(r, &e);
    print_tail(r);
    tf_reader_close(r);
    return 0;
}
