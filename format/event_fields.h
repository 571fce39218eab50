/*
 * event_fields.h - the fields of each event kind, in encoding order.
 *
 * The writer and the reader walk the same table, so an event is encoded one
 * way only.  Each field names where it lives in tf_event and how it is
 * encoded (FORMAT.md section 7, "Events").
 */
#ifndef TF_EVENT_FIELDS_H
#define TF_EVENT_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"
#include "varint.h"

enum tf_enc {
    TF_ENC_U32,    /* uint32_t, LEB128 */
    TF_ENC_U64,    /* uint64_t, LEB128 */
    TF_ENC_S32,    /* int32_t, zigzag LEB128 */
    TF_ENC_PTR,    /* uint64_t, zigzag delta from the previous value of its class */
    TF_ENC_SEQREL  /* uint64_t seq of an earlier event, as LEB128 (event seq - value) */
};

/* Delta classes of TF_ENC_PTR fields: addresses in one space stay close. */
enum tf_ptr_class { TF_PTR_DEVICE, TF_PTR_HOST, TF_PTR_STREAM, TF_PTR_CLASSES };

/* Common fields come first in every event: bits 0..5 of the presence map. */
#define TF_COMMON_FIELDS 6
#define TF_KIND_FIELDS_MAX 8

typedef struct tf_field {
    uint16_t offset;    /* offsetof(tf_event, ...) */
    uint8_t enc;        /* enum tf_enc */
    uint8_t ptr_class;  /* enum tf_ptr_class, for TF_ENC_PTR */
} tf_field;

typedef struct tf_event_layout {
    uint8_t nfields;
    tf_field fields[TF_KIND_FIELDS_MAX];
} tf_event_layout;

/* The tables live here, not in a .c file, so that the writer and the reader,
 * which dispatch on the kind with TF_EVENT_KINDS, see them as constants: with
 * each kind's fields written out (put_kind_fields, get_kind_fields), every
 * field's encoding is a constant and the encoding switch goes away.
 * The order of fields within a kind is part of the format: append only. */
#define TF_F(member, enc) { offsetof(tf_event, u.member), enc, 0 }
#define TF_P(member, cls) { offsetof(tf_event, u.member), TF_ENC_PTR, cls }

static const tf_event_layout tf_cuda_layout = { 7, {
    TF_F(cuda.api, TF_ENC_U32), TF_F(cuda.device, TF_ENC_S32), TF_F(cuda.result, TF_ENC_S32),
    TF_F(cuda.flags, TF_ENC_U32), TF_P(cuda.ptr, TF_PTR_DEVICE), TF_F(cuda.size, TF_ENC_U64),
    TF_P(cuda.stream, TF_PTR_STREAM) } };

static const tf_event_layout tf_pool_layout = { 5, {
    TF_F(pool.pool, TF_ENC_U32), TF_P(pool.ptr, TF_PTR_DEVICE), TF_F(pool.requested, TF_ENC_U64),
    TF_F(pool.granted, TF_ENC_U64), TF_P(pool.stream, TF_PTR_STREAM) } };

static const tf_event_layout tf_pool_op_layout = { 4, {
    TF_F(pool_op.pool, TF_ENC_U32), TF_F(pool_op.op, TF_ENC_U32),
    TF_F(pool_op.begin, TF_ENC_SEQREL), TF_F(pool_op.arg, TF_ENC_U64) } };

static const tf_event_layout tf_segment_layout = { 4, {
    TF_F(segment.pool, TF_ENC_U32), TF_F(segment.grow, TF_ENC_U32),
    TF_P(segment.ptr, TF_PTR_DEVICE), TF_F(segment.size, TF_ENC_U64) } };

static const tf_event_layout tf_gc_layout = { 8, {
    TF_F(gc.generation, TF_ENC_S32), TF_F(gc.collected, TF_ENC_U64),
    TF_F(gc.uncollectable, TF_ENC_U64), TF_F(gc.duration_ns, TF_ENC_U64),
    TF_F(gc.allocs[0], TF_ENC_U64), TF_F(gc.allocs[1], TF_ENC_U64), TF_F(gc.allocs[2], TF_ENC_U64),
    TF_F(gc.interp, TF_ENC_U64) } };

static const tf_event_layout tf_host_layout = { 4, {
    TF_F(host.domain, TF_ENC_U32), TF_P(host.ptr, TF_PTR_HOST), TF_F(host.size, TF_ENC_U64),
    TF_F(host.api, TF_ENC_U32) } };

/* 1.3.  No TF_ENC_PTR here: a 1.2 reader skips this kind, and a delta base
 * it did not see move would misread every later host pointer. */
static const tf_event_layout tf_py_free_layout = { 2, {
    TF_F(host.ptr, TF_ENC_U64), TF_F(host.domain, TF_ENC_U32) } };

static const tf_event_layout tf_double_init_layout = { 2, {
    TF_P(double_init.obj, TF_PTR_HOST), TF_F(double_init.type_name, TF_ENC_U32) } };

static const tf_event_layout tf_mark_layout = { 1, { TF_F(mark.text, TF_ENC_U32) } };

static const tf_event_layout tf_release_failed_layout = { 2, {
    TF_F(release_failed.release, TF_ENC_SEQREL), TF_F(release_failed.result, TF_ENC_S32) } };

static const tf_event_layout tf_end_layout = { 5, {
    TF_F(end.events, TF_ENC_U64), TF_F(end.strings, TF_ENC_U64), TF_F(end.native_stacks, TF_ENC_U64),
    TF_F(end.py_stacks, TF_ENC_U64), TF_F(end.frames, TF_ENC_U64) } };
#undef TF_F
#undef TF_P

/* Every event kind this version defines, with its layout. */
#define TF_EVENT_KINDS(X)                                                     \
    X(TF_EV_CUDA_ALLOC, tf_cuda_layout) X(TF_EV_CUDA_FREE, tf_cuda_layout)     \
    X(TF_EV_POOL_ALLOC, tf_pool_layout) X(TF_EV_POOL_FREE, tf_pool_layout)     \
    X(TF_EV_POOL_OP_BEGIN, tf_pool_op_layout)                                  \
    X(TF_EV_POOL_OP_END, tf_pool_op_layout)                                    \
    X(TF_EV_POOL_SEGMENT, tf_segment_layout)                                   \
    X(TF_EV_GC_START, tf_gc_layout) X(TF_EV_GC_STOP, tf_gc_layout)             \
    X(TF_EV_HOST_ALLOC, tf_host_layout) X(TF_EV_HOST_FREE, tf_host_layout)     \
    X(TF_EV_PY_ALLOC, tf_host_layout)                                          \
    X(TF_EV_PY_DOUBLE_INIT, tf_double_init_layout)                             \
    X(TF_EV_MARK, tf_mark_layout) X(TF_EV_END, tf_end_layout)                 \
    X(TF_EV_RELEASE_FAILED, tf_release_failed_layout)                         \
    X(TF_EV_PY_FREE, tf_py_free_layout)

/* The layout of an event kind, or NULL for a kind this version does not know. */
static inline const tf_event_layout *tf_event_layout_of(uint32_t kind)
{
    switch (kind) {
#define TF_LAYOUT_CASE(kind, layout) case kind: return &layout;
    TF_EVENT_KINDS(TF_LAYOUT_CASE)
#undef TF_LAYOUT_CASE
    default: return NULL;
    }
}

/* Longest event payload: the 2-byte presence map, the common fields
 * (seq gap, tid, time, parent, two stack ids) and the longest kind (gc: an
 * s32 and seven u64).  Below 128, so an event's length prefix is always one
 * byte. */
#define TF_EVENT_PAYLOAD_MAX (2 + 45 + 5 + 7 * TF_VARINT_MAX)
_Static_assert(TF_EVENT_PAYLOAD_MAX < 128, "event length must fit one byte");

#endif
