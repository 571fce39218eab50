/* source.c - event sources: a log file, or an array. */
#include "source.h"

#include <stdio.h>
#include <string.h>

static int file_next(rp_source *s, tf_event *e)
{
    if (tf_reader_next(s->reader, e)) {
        rp_progress_tick(&s->progress, e->seq);
        return 1;
    }
    rp_progress_done(&s->progress);
    return 0;
}

/* Read past the logs before the one wanted. */
static int skip_runs(tf_reader *r, int run, char *err, size_t errlen)
{
    tf_event e;
    for (int n = 1; n < run; n++) {
        while (tf_reader_next(r, &e))
            ;
        if (!tf_reader_next_run(r)) {
            snprintf(err, errlen, "the file holds %d log(s), not %d", n, run);
            return -1;
        }
    }
    return 0;
}

static int file_rewind(rp_source *s)
{
    char err[256];
    tf_reader *r = tf_reader_open(s->path, err, sizeof err);
    if (!r || skip_runs(r, s->run, err, sizeof err) < 0) {
        tf_reader_close(r);
        return -1;
    }
    tf_reader_close(s->reader);
    s->reader = r;
    rp_progress_start(&s->progress, s->what);
    return 0;
}

int rp_source_open(rp_source *s, const char *path, const char *what, int run, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->reader = tf_reader_open(path, err, errlen);
    if (!s->reader)
        return -1;
    s->run = run > 0 ? run : 1;
    if (skip_runs(s->reader, s->run, err, errlen) < 0) {
        tf_reader_close(s->reader);
        s->reader = NULL;
        return -1;
    }
    s->path = path;
    s->next = file_next;
    s->rewind = file_rewind;
    s->what = what;
    rp_progress_start(&s->progress, what);
    return 0;
}

static int array_next(rp_source *s, tf_event *e)
{
    if (s->pos == s->n)
        return 0;
    *e = s->ev[s->pos++];
    return 1;
}

static int array_rewind(rp_source *s)
{
    s->pos = 0;
    return 0;
}

void rp_source_array(rp_source *s, const tf_event *ev, size_t n, int clean_end)
{
    memset(s, 0, sizeof *s);
    s->ev = ev;
    s->n = n;
    s->clean_end = clean_end;
    s->next = array_next;
    s->rewind = array_rewind;
}

void rp_source_close(rp_source *s)
{
    if (s->close)
        s->close(s);
    s->close = NULL;
    if (s->reader)
        tf_reader_close(s->reader);
    s->reader = NULL;
}

int rp_source_clean_end(const rp_source *s)
{
    return s->reader ? tf_reader_status(s->reader)->clean_end : s->clean_end;
}

uint64_t rp_source_next_run(const rp_source *s)
{
    return s->reader ? tf_reader_status(s->reader)->next_run_offset : 0;
}

const char *rp_source_pool_name(void *ctx, uint32_t pool)
{
    rp_source *s = ctx;
    return s->reader ? tf_reader_pool_name(s->reader, pool) : NULL;
}
