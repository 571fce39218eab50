/*
 * event_fields.c - the per-kind field tables (FORMAT.md, "Event records").
 * The order of fields within a kind is part of the format: append only.
 */
#include <stddef.h>

#include "event_fields.h"
#include "trace_format.h"

#define F(member, enc) { offsetof(tf_event, u.member), enc, 0 }
#define P(member, cls) { offsetof(tf_event, u.member), TF_ENC_PTR, cls }

static const tf_event_layout cuda_layout = { 7, {
    F(cuda.api, TF_ENC_U32), F(cuda.device, TF_ENC_S32), F(cuda.result, TF_ENC_S32),
    F(cuda.flags, TF_ENC_U32), P(cuda.ptr, TF_PTR_DEVICE), F(cuda.size, TF_ENC_U64),
    P(cuda.stream, TF_PTR_STREAM) } };

static const tf_event_layout pool_layout = { 5, {
    F(pool.pool, TF_ENC_U32), P(pool.ptr, TF_PTR_DEVICE), F(pool.requested, TF_ENC_U64),
    F(pool.granted, TF_ENC_U64), P(pool.stream, TF_PTR_STREAM) } };

static const tf_event_layout pool_op_layout = { 4, {
    F(pool_op.pool, TF_ENC_U32), F(pool_op.op, TF_ENC_U32),
    F(pool_op.begin, TF_ENC_SEQREL), F(pool_op.arg, TF_ENC_U64) } };

static const tf_event_layout segment_layout = { 4, {
    F(segment.pool, TF_ENC_U32), F(segment.grow, TF_ENC_U32),
    P(segment.ptr, TF_PTR_DEVICE), F(segment.size, TF_ENC_U64) } };

static const tf_event_layout gc_layout = { 7, {
    F(gc.generation, TF_ENC_S32), F(gc.collected, TF_ENC_U64),
    F(gc.uncollectable, TF_ENC_U64), F(gc.duration_ns, TF_ENC_U64),
    F(gc.allocs[0], TF_ENC_U64), F(gc.allocs[1], TF_ENC_U64), F(gc.allocs[2], TF_ENC_U64) } };

static const tf_event_layout host_layout = { 3, {
    F(host.domain, TF_ENC_U32), P(host.ptr, TF_PTR_HOST), F(host.size, TF_ENC_U64) } };

static const tf_event_layout double_init_layout = { 2, {
    P(double_init.obj, TF_PTR_HOST), F(double_init.type_name, TF_ENC_U32) } };

static const tf_event_layout mark_layout = { 1, { F(mark.text, TF_ENC_U32) } };

static const tf_event_layout end_layout = { 5, {
    F(end.events, TF_ENC_U64), F(end.strings, TF_ENC_U64), F(end.native_stacks, TF_ENC_U64),
    F(end.py_stacks, TF_ENC_U64), F(end.frames, TF_ENC_U64) } };

const tf_event_layout *tf_event_layout_of(uint32_t kind)
{
    switch (kind) {
    case TF_EV_CUDA_ALLOC: case TF_EV_CUDA_FREE: return &cuda_layout;
    case TF_EV_POOL_ALLOC: case TF_EV_POOL_FREE: return &pool_layout;
    case TF_EV_POOL_OP_BEGIN: case TF_EV_POOL_OP_END: return &pool_op_layout;
    case TF_EV_POOL_SEGMENT: return &segment_layout;
    case TF_EV_GC_START: case TF_EV_GC_STOP: return &gc_layout;
    case TF_EV_HOST_ALLOC: case TF_EV_HOST_FREE: case TF_EV_PY_ALLOC: return &host_layout;
    case TF_EV_PY_DOUBLE_INIT: return &double_init_layout;
    case TF_EV_MARK: return &mark_layout;
    case TF_EV_END: return &end_layout;
    default: return NULL;
    }
}
