/*
 * test_random.c - a million arbitrary events, sealed at irregular points,
 * come back exactly.
 */
#include "tf_test.h"

#define EVENTS 1000000

int main(void)
{
    tf_test_file file = tf_test_file_new();
    tf_header h = { .pid = 7, .cmdline = "random" };
    tf_writer *w = tf_writer_new(&h);
    tf_chunk chunk = { 0 };
    uint64_t s = 12345, seal_rng = 777;
    tf_event e, got;
    for (uint64_t seq = 1; seq <= EVENTS; seq++) {
        tf_test_random_event(&s, seq, &e);
        tf_write_event(w, &e);
        if (tf_test_rand(&seal_rng) % 3000 == 0)
            tf_test_flush(w, file.fd, &chunk);
    }
    tf_reader *r = tf_test_close_and_read(w, &file, &chunk);
    if (!r)
        return tf_test_done("random");
    s = 12345;
    uint64_t mismatches = 0;
    for (uint64_t seq = 1; seq <= EVENTS; seq++) {
        tf_test_random_event(&s, seq, &e);
        if (tf_reader_next(r, &got) != 1) {
            CHECK(!"log ended early");
            break;
        }
        if (memcmp(&e, &got, sizeof e) != 0 && mismatches++ < 5)
            fprintf(stderr, "event %llu differs (kind %u)\n", (unsigned long long)seq, e.kind);
    }
    CHECK(mismatches == 0);
    CHECK(tf_reader_next(r, &got) == 0);
    const tf_read_status *st = tf_reader_status(r);
    CHECK(st->events == EVENTS && st->corrupt_frames == 0 && !st->truncated);
    tf_reader_close(r);
    return tf_test_done("random");
}
