/*
 * cuda_api.h - the CUDA entry points a log names: one table of their facts.
 *
 * Every consumer reads this table and nothing else: the format (the api
 * field's numbers and names), the replay (which address space an event is
 * in, hence which bookkeeping checks it and whether it is a pool's segment),
 * the preload (the symbols libtrace.so exports: libtrace.map is generated
 * from it) and FORMAT.md's API table (tests/format/test_api_table.py holds
 * the document to it).  A new entry point is one new row, at the end.
 *
 * Columns:
 *   name    the C symbol; TF_API_<name> is its number in the log, which is
 *           its row (from 1; 0 is "unknown"): append only
 *   event   ALLOC: recorded as cuda_alloc; FREE: as cuda_free
 *   space   what the address names: DEVICE device memory (managed memory
 *           included), PINNED page-locked host memory, HANDLE a VMM physical
 *           allocation (cuMemCreate's handle), VA a VMM address reservation,
 *           MAPPING a VMM mapping inside a reservation (no memory of its own:
 *           the handle and the reservation are counted already), CONTEXT
 *           a context torn down (device reset, primary context reset or
 *           last release, context destroyed): no address of its own, the
 *           event's device says whose memory went with it (-1: unknown)
 *   layer   RUNTIME (libcudart) or DRIVER (libcuda)
 *   ptsz    1 when a per-thread-default-stream variant NAME_ptsz exists
 *           (same signature; libtrace.so exports it too)
 */
#ifndef TF_CUDA_API_H
#define TF_CUDA_API_H

#include <stdint.h>

#include "cuda_api_table.h"

/* The api field's numbers (FORMAT.md section 7, "API table"). */
enum tf_api {
    TF_API_UNKNOWN = 0,
#define TF_API_ENUM(name, event, space, layer, ptsz) TF_API_##name,
    TF_CUDA_APIS(TF_API_ENUM)
#undef TF_API_ENUM
    TF_API_COUNT
};

/* Address spaces, each with its own bookkeeping in the replay's checks.
 * Those below TF_SPACE_COUNT hold memory; a mapping and an unknown number
 * are no allocation of their own. */
typedef enum tf_space {
    TF_SPACE_NONE = -1,        /* an api number this version does not know */
    TF_SPACE_DEVICE,
    TF_SPACE_PINNED,
    TF_SPACE_HANDLE,
    TF_SPACE_VA,
    TF_SPACE_COUNT,
    TF_SPACE_MAPPING = TF_SPACE_COUNT,
    TF_SPACE_CONTEXT           /* a context's teardown: every block of its device is gone */
} tf_space;

typedef enum tf_api_layer { TF_LAYER_RUNTIME, TF_LAYER_DRIVER } tf_api_layer;

typedef struct tf_api_info {
    const char *name;
    uint32_t event;            /* TF_EV_CUDA_ALLOC or TF_EV_CUDA_FREE */
    tf_space space;
    tf_api_layer layer;
    int ptsz;
} tf_api_info;

/* The row of api, or NULL for 0 and numbers this version does not know. */
const tf_api_info *tf_api(uint32_t api);
/* Its space (TF_SPACE_NONE for unknown numbers). */
tf_space tf_api_space(uint32_t api);
/* "device", "pinned", "handle", "va", "mapping", "context" ("unknown" otherwise). */
const char *tf_space_name(tf_space s);

#endif
