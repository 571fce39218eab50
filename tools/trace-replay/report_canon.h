/*
 * report_canon.h - ids of a log's interned content, one per content.
 *
 * A writer defines a content again under a new id after it forgot what it
 * interned (the recorder does once its tables hold 32 MiB, FORMAT.md section
 * 6) and in each segment of a log kept within a byte budget (section 13).
 * The report's tallies keyed by id then split one thing into several: a
 * line of the program into a site per segment, a type into two types, a
 * place into a place per segment.  Here each id maps to the first id
 * defined with the same content, and tallies key on that.
 *
 * Failure policy: an id the log does not define (damage, a deleted
 * segment) is its own canonical id; memory runs out only through the
 * maps, which abort as every report map does (xalloc.h).
 */
#ifndef RPT_CANON_H
#define RPT_CANON_H

#include <stdint.h>

#include "ptrmap.h"
#include "stacks.h"
#include "trace_format.h"

typedef struct rpt_canon {
    const tf_reader *rd;
    rn_stacks *stacks;             /* for the kinds of native frames (places) */
    rp_ptrmap code, code_by_content;       /* py code id -> canonical; content hash -> it */
    rp_ptrmap string, string_by_content;
    rp_ptrmap py_stack, py_by_content;
    rp_ptrmap native, native_by_content;
    rp_ptrmap place, place_by_content;
} rpt_canon;

void rpt_canon_init(rpt_canon *c, const tf_reader *rd, rn_stacks *stacks);
void rpt_canon_free(rpt_canon *c);

/* The same file, function and first line. */
uint32_t rpt_canon_code(rpt_canon *c, uint32_t code);
/* The same text. */
uint32_t rpt_canon_string(rpt_canon *c, uint32_t id);
/* The same frames: code objects by content, and lines. */
uint32_t rpt_canon_py_stack(rpt_canon *c, uint32_t id);
/* The same frames: addresses, each in the same module. */
uint32_t rpt_canon_native_stack(rpt_canon *c, uint32_t id);
/* A native stack as a place in the program: the same frames of the program
 * (rn_frame_kind user: address and module), with each run of the others
 * (the interpreter's, start-up's; the tracer's apart) standing as one,
 * whatever its frames.  So it prints the same, folded (rn_fold_next), but
 * for the length of a folded run.  CPython 3.13 specialises a call after
 * its first runs: the eval loop reaches an extension's function through
 * other code of its own, and one line of a loop made two places, its
 * first object and the 29 after, which printed alike. */
uint32_t rpt_canon_place(rpt_canon *c, uint32_t native);

/* Hashing and probing for tables keyed by content (report_collect.c too). */
uint64_t rpt_mix(uint64_t h, uint64_t v);
/* The slot for hash h in m, probing past entries holding other keys (same()
 * says whether the entry at index idx is ours): the entry, or NULL with
 * *key the free key to put it under. */
uint64_t *rpt_index_slot(rp_ptrmap *m, uint64_t h, int (*same)(const void *ctx, uint64_t idx), const void *ctx,
                         uint64_t *key);

#endif
