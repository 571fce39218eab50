/*
 * stacks.h - stack ids from the log to readable frames.
 *
 * Native frames: instruction pointer, the module holding it (from the log's
 * module records) and the offset in it; function, file and line come from
 * offline symbolisation when the binaries or their debug files are found.
 * Python frames: file, line and function from the log's code records.
 */
#ifndef RP_STACKS_H
#define RP_STACKS_H

#include <stdint.h>

#include "trace_format.h"

typedef struct rp_native_frame {
    uint64_t ip, offset;
    const char *module;         /* NULL when no module holds ip */
    const char *function;       /* NULL when unknown */
    const char *file;
    uint32_t line;              /* 0 when unknown */
} rp_native_frame;

typedef struct rp_py_frame {
    const char *file, *function;
    uint32_t line;
} rp_py_frame;

typedef struct rp_stacks rp_stacks;

/* reader: where stacks and modules come from (NULL: every stack is empty);
 * debug_dirs: extra directories searched for binaries and debug files. */
rp_stacks *rp_stacks_new(const tf_reader *reader, const char *const *debug_dirs, int ndirs);
void rp_stacks_free(rp_stacks *s);

/* Frames of a stack, innermost first; returns how many were written (at
 * most max).  Strings stay valid until rp_stacks_free. */
uint32_t rp_stacks_native(rp_stacks *s, uint32_t id, rp_native_frame *out, uint32_t max);
uint32_t rp_stacks_py(rp_stacks *s, uint32_t id, rp_py_frame *out, uint32_t max);

/* 1 when a frame of native stack id is in a function whose name contains
 * key (lowercase); answers are cached per (stack, key). */
int rp_stacks_has_function(rp_stacks *s, uint32_t id, const char *key);
/* Read stacks from this reader from now on (a log opened again). */
void rp_stacks_use_reader(rp_stacks *s, const tf_reader *reader);

#endif
