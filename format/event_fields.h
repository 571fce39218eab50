/*
 * event_fields.h - the fields of each event kind, in encoding order.
 *
 * The writer and the reader walk the same table, so an event is encoded one
 * way only.  Each field names where it lives in tf_event and how it is
 * encoded (FORMAT.md, "Event records").
 */
#ifndef TF_EVENT_FIELDS_H
#define TF_EVENT_FIELDS_H

#include <stdint.h>

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

/* The layout of an event kind, or NULL for a kind this version does not know. */
const tf_event_layout *tf_event_layout_of(uint32_t kind);

/* Longest event payload: the 2-byte presence map, the common fields
 * (seq gap, tid, time, parent, two stack ids) and the longest kind (gc).
 * Below 128, so an event's length prefix is always one byte. */
#define TF_EVENT_PAYLOAD_MAX (2 + 45 + 5 + 6 * TF_VARINT_MAX)
_Static_assert(TF_EVENT_PAYLOAD_MAX < 128, "event length must fit one byte");

#endif
