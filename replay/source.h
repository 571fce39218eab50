/*
 * source.h - where events come from: a log file (through the reader) or an
 * array in memory (tests, minimize's candidates).  explore reads twice, so a
 * source can start over.
 */
#ifndef RP_SOURCE_H
#define RP_SOURCE_H

#include <stddef.h>

#include "progress.h"
#include "trace_format.h"

typedef struct rp_source {
    /* 1 with *e filled, 0 at the end. */
    int (*next)(struct rp_source *s, tf_event *e);
    /* Start over from the first event; 0, or -1 if the log went unreadable. */
    int (*rewind)(struct rp_source *s);
    /* File sources: the reader (names, stacks, status); NULL for arrays. */
    tf_reader *reader;
    const char *path;
    const tf_event *ev;
    size_t n, pos;
    int clean_end;             /* arrays: whether to treat the end as clean */
    rp_progress progress;      /* files: a progress line on a terminal */
    const char *what;          /* its words */
    int run;                   /* which log of the file (logs joined with cat), from 1 */
    /* Sources of their own kind (a log followed while it is written:
     * follow.h): their state, and what closing it takes. */
    void *ctx;
    void (*close)(struct rp_source *s);
} rp_source;

/* 0, or -1 with a message in err.  what: the progress line's words
 * ("trace-replay check"); run: which log of the file to read, from 1 (a file
 * can hold several logs joined with cat). */
int rp_source_open(rp_source *s, const char *path, const char *what, int run, char *err, size_t errlen);
void rp_source_array(rp_source *s, const tf_event *ev, size_t n, int clean_end);
void rp_source_close(rp_source *s);
/* After the last next(): did the log end with its END record? */
int rp_source_clean_end(const rp_source *s);
/* After the last next(): where another log of the file starts (0: none). */
uint64_t rp_source_next_run(const rp_source *s);
/* The pool-name lookup for rp_options (ctx: the source). */
const char *rp_source_pool_name(void *ctx, uint32_t pool);

#endif
