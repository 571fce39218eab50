/*
 * fuzz_import.c - libFuzzer target: arbitrary bytes as JSON lines through
 * `trace-replay import` (the JSON parser, the importer, the writer), then
 * the log it wrote back through the reader.
 *
 * Input the importer refuses is a normal outcome.  Input it accepts must
 * make a log that reads back whole, with as many events as were written:
 * whatever values an importer hands the writer, the writer must encode them
 * so the reader decodes them.  A crash, a sanitizer report, a leak, or a log
 * that does not read back is a finding.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import_json.h"
#include "trace_format.h"

static void fail(const char *what, const rp_import_result *res, const tf_read_status *st)
{
    fprintf(stderr, "fuzz_import: %s: %llu events written, %llu read back, %llu corrupt frames, "
            "truncated %d\n", what, (unsigned long long)res->events,
            (unsigned long long)(st ? st->events : 0),
            (unsigned long long)(st ? st->corrupt_frames : 0), st ? st->truncated : 0);
    abort();
}

/* The log in fd reads back whole, with every event written. */
static void read_back(int fd, const rp_import_result *res)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0 || sb.st_size == 0)
        fail("no log written", res, NULL);
    void *log = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (log == MAP_FAILED)
        fail("cannot map the log", res, NULL);
    char err[256];
    tf_reader *r = tf_reader_open_mem(log, (size_t)sb.st_size, err, sizeof err);
    if (!r)
        fail(err, res, NULL);
    tf_event e;
    while (tf_reader_next(r, &e))
        ;
    const tf_read_status *st = tf_reader_status(r);
    if (st->corrupt_frames || st->truncated || st->events != res->events)
        fail("the log does not read back", res, st);
    tf_reader_close(r);
    munmap(log, (size_t)sb.st_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;  /* fmemopen refuses an empty buffer */
    FILE *in = fmemopen((void *)data, size, "r");
    int fd = memfd_create("fuzz_import", 0);
    if (!in || fd < 0)
        abort();
    rp_import_result res;
    if (rp_import(in, fd, &res) == 0)
        read_back(fd, &res);
    fclose(in);
    close(fd);
    return 0;
}
