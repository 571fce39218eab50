/*
 * cuda_entries.c - the wrappers themselves, generated from CUDA_ENTRIES:
 * for each entry point, the exported symbol (its real function found from
 * the caller) and CUDA_SLOTS slot wrappers (each bound to one real function
 * pointer handed out by dlsym or cuGetProcAddress).
 */
#include "cuda_hooks.h"
#include "cuda_symbols.h"
#include "cuda_api.h"

#include <stdatomic.h>

#define EXPORTED(name, hook, params, args) \
    int name params \
    { \
        return cuda_hook_##hook(CUDA_PREPEND(cuda_real_for_caller(CUDA_##name, __builtin_return_address(0)), \
                                             args)); \
    }
CUDA_ENTRIES(EXPORTED)

#define SLOT(name, hook, params, args, i) \
    static int name##_slot##i params \
    { \
        return cuda_hook_##hook(CUDA_PREPEND(atomic_load_explicit(&cuda_slot_real[CUDA_##name][i], \
                                                                  memory_order_relaxed), \
                                             args)); \
    }
#define SLOTS(name, hook, params, args) \
    SLOT(name, hook, params, args, 0) SLOT(name, hook, params, args, 1) \
    SLOT(name, hook, params, args, 2) SLOT(name, hook, params, args, 3) \
    SLOT(name, hook, params, args, 4) SLOT(name, hook, params, args, 5) \
    SLOT(name, hook, params, args, 6) SLOT(name, hook, params, args, 7)
CUDA_ENTRIES(SLOTS)

_Static_assert(CUDA_SLOTS == 8, "SLOTS above makes eight");

#define SLOT_ROW(name, hook, params, args) \
    [CUDA_##name] = { (void *)name##_slot0, (void *)name##_slot1, (void *)name##_slot2, \
                      (void *)name##_slot3, (void *)name##_slot4, (void *)name##_slot5, \
                      (void *)name##_slot6, (void *)name##_slot7 },
void *const cuda_slot_wrapper[CUDA_ENTRY_COUNT][CUDA_SLOTS] = { CUDA_ENTRIES(SLOT_ROW) };

#define NAME_ROW(name, hook, params, args) [CUDA_##name] = #name,
const char *const cuda_entry_name[CUDA_ENTRY_COUNT] = { CUDA_ENTRIES(NAME_ROW) };

void *_Atomic cuda_slot_real[CUDA_ENTRY_COUNT][CUDA_SLOTS];

/* Every entry point of the format's table (format/cuda_api_table.h, which
 * also makes libtrace.map) has its wrappers here, _ptsz variants included:
 * a row without one does not compile. */
#define HAS_PTSZ_0(name)
#define HAS_PTSZ_1(name) _Static_assert(CUDA_##name##_ptsz >= 0, "no wrapper for " #name "_ptsz");
#define HAS_ENTRY(name, event, space, layer, ptsz) \
    _Static_assert(CUDA_##name >= 0, "no wrapper for " #name); HAS_PTSZ_##ptsz(name)
TF_CUDA_APIS(HAS_ENTRY)
