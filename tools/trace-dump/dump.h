/*
 * dump.h - trace-dump's output forms: readable lines, JSON lines, a summary.
 */
#ifndef TF_DUMP_H
#define TF_DUMP_H

#include <stdio.h>

#include "json.h"
#include "stacks.h"
#include "trace_format.h"

typedef struct dump_ctx {
    tf_reader *r;
    rn_stacks *stacks;          /* --json: symbolised stacks, each resolved once */
    rn_json j;
    FILE *out;
    /* Definitions already printed as JSON lines, by list. */
    uint32_t json_pools, json_threads, json_infos, json_modules, json_unloads;
    /* The names printed for each thread printed (reader's strings, compared
     * by address), and the reader's renames when last looked at. */
    const char **json_thread_name, **json_thread_py;
    uint32_t json_thread_cap;
    uint64_t json_renames;
    /* --kinds: the event kinds printed (all when no list was given) */
    int some_kinds;
    unsigned char kinds[256];
} dump_ctx;

/* Receives an event's fields one by one (text and JSON differ only here). */
typedef struct dump_sink {
    void (*u)(dump_ctx *d, const char *key, uint64_t v, int is_address);
    void (*i)(dump_ctx *d, const char *key, int64_t v);
    void (*s)(dump_ctx *d, const char *key, const char *s, size_t n); /* s NULL: unknown */
    void (*u3)(dump_ctx *d, const char *key, const uint64_t v[3]);
} dump_sink;

void dump_kind_fields(dump_ctx *d, const tf_event *e, const dump_sink *sink);

void dump_json_header(dump_ctx *d);
/* Definition lines (pool, thread, info, module, module_unload) for what the
 * reader has met since the last call; dump_json_event calls it before each
 * event. */
void dump_json_definitions(dump_ctx *d);
void dump_json_event(dump_ctx *d, const tf_event *e);

#endif
