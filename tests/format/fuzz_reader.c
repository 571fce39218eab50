/*
 * fuzz_reader.c - libFuzzer target: the reader on arbitrary bytes.
 *
 * Opens the input as a log and walks all of it, touching every look-up an
 * event leads to, so that any out-of-bounds read or unbounded allocation in
 * frames, records or definitions shows up under the sanitizers.
 */
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

static void touch_stacks(const tf_reader *r, const tf_event *e)
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
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    tf_reader *r = tf_reader_open_mem(data, size, err, sizeof err);
    if (!r)
        return 0;
    tf_event e;
    while (tf_reader_next(r, &e)) {
        touch_stacks(r, &e);
        tf_reader_string(r, e.u.mark.text, NULL);
        tf_reader_thread_name(r, e.tid);
        tf_reader_pool_name(r, e.u.pool.pool);
    }
    const char *key, *value;
    for (uint32_t i = 0; tf_reader_info(r, i, &key, &value); i++)
        ;
    tf_reader_damage(r);
    tf_reader_close(r);
    return 0;
}
