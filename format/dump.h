/*
 * dump.h - trace-dump's output forms: readable lines, JSON lines, a summary.
 */
#ifndef TF_DUMP_H
#define TF_DUMP_H

#include <stdio.h>

#include "symbolize.h"
#include "trace_format.h"

#define DUMP_SYM_CACHE 4096

typedef struct dump_sym_slot {
    const tf_module *module;
    uint64_t ip;
    sym_info info;
} dump_sym_slot;

typedef struct dump_ctx {
    tf_reader *r;
    sym_ctx *sym;
    FILE *out;
    dump_sym_slot cache[DUMP_SYM_CACHE];  /* stacks repeat: resolve each ip once */
    /* Definitions already printed as JSON lines, by list. */
    uint32_t json_pools, json_threads, json_infos, json_modules, json_unloads;
} dump_ctx;

/* The symbol for one frame of a native stack (frame > 0: a return address). */
const sym_info *dump_symbol(dump_ctx *d, const tf_module *m, uint64_t ip, uint32_t frame);

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
