/*
 * fuzz_reader.c - libFuzzer target: the reader on arbitrary bytes.
 *
 * Opens the input as a log and walks all of it, touching every look-up an
 * event leads to, so that any out-of-bounds read or unbounded allocation in
 * frames, records or definitions shows up under the sanitizers.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_read_all.h"
#include "trace_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    tf_reader *r = tf_reader_open_mem(data, size, err, sizeof err);
    if (r)
        fuzz_read_all(r);
    return 0;
}
