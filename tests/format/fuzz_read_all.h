/*
 * fuzz_read_all.h - what the reader's fuzzers do with a log they opened:
 * walk all of it, touching every look-up an event leads to, so that any
 * out-of-bounds read or unbounded allocation in frames, records or
 * definitions shows up under the sanitizers (fuzz_reader.c, fuzz_records.c).
 */
#ifndef FUZZ_READ_ALL_H
#define FUZZ_READ_ALL_H

#include "trace_format.h"

static void fuzz_touch_event(const tf_reader *r, const tf_event *e)
{
    const uint64_t *ips;
    const tf_py_frame *frames;
    uint32_t n;
    if (tf_reader_native_stack(r, e->native_stack, &ips, &n))
        for (uint32_t i = 0; i < n; i++)
            tf_reader_module_for(r, ips[i]);
    if (tf_reader_py_stack(r, e->py_stack, &frames, &n))
        for (uint32_t i = 0; i < n; i++) {
            const tf_py_code *c = tf_reader_py_code(r, frames[i].code);
            if (c) {
                tf_reader_string(r, c->file, NULL);
                tf_reader_string(r, c->function, NULL);
            }
        }
    tf_reader_string(r, e->u.mark.text, NULL);
    tf_reader_thread_name(r, e->tid);
    tf_reader_pool_name(r, e->u.pool.pool);
}

/* Every event, then the INFO pairs and the damage; closes r. */
static void fuzz_read_all(tf_reader *r)
{
    tf_event e;
    while (tf_reader_next(r, &e))
        fuzz_touch_event(r, &e);
    const char *key, *value;
    for (uint32_t i = 0; tf_reader_info(r, i, &key, &value); i++)
        ;
    tf_reader_damage(r);
    tf_reader_close(r);
}

#endif
