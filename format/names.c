/*
 * names.c - record kinds and CUDA entry points: names and facts.  Both
 * tables follow the numbering in trace_format.h and cuda_api.h, which is
 * part of the format (FORMAT.md section 7, "Kind table" and "API table").
 */
#include <stdio.h>

#include "trace_format.h"

#define EVENT_ALLOC TF_EV_CUDA_ALLOC
#define EVENT_FREE TF_EV_CUDA_FREE
#define SPACE_DEVICE TF_SPACE_DEVICE
#define SPACE_PINNED TF_SPACE_PINNED
#define SPACE_HANDLE TF_SPACE_HANDLE
#define SPACE_VA TF_SPACE_VA
#define SPACE_MAPPING TF_SPACE_MAPPING
#define SPACE_CONTEXT TF_SPACE_CONTEXT
#define LAYER_RUNTIME TF_LAYER_RUNTIME
#define LAYER_DRIVER TF_LAYER_DRIVER

static const tf_api_info apis[TF_API_COUNT] = {
#define API_ROW(name, event, space, layer, ptsz) \
    [TF_API_##name] = {#name, EVENT_##event, SPACE_##space, LAYER_##layer, ptsz},
    TF_CUDA_APIS(API_ROW)
#undef API_ROW
};

const tf_api_info *tf_api(uint32_t api)
{
    return api && api < TF_API_COUNT ? &apis[api] : NULL;
}

tf_space tf_api_space(uint32_t api)
{
    const tf_api_info *a = tf_api(api);
    return a ? a->space : TF_SPACE_NONE;
}

const char *tf_space_name(tf_space s)
{
    static const char *const names[] = {
        [TF_SPACE_DEVICE] = "device", [TF_SPACE_PINNED] = "pinned", [TF_SPACE_HANDLE] = "handle",
        [TF_SPACE_VA] = "va", [TF_SPACE_MAPPING] = "mapping", [TF_SPACE_CONTEXT] = "context",
    };
    return s >= 0 && s <= TF_SPACE_CONTEXT ? names[s] : "unknown";
}

const char *tf_api_name(uint32_t api)
{
    /* Unknown numbers come from newer writers; one static buffer per thread
     * keeps the function allocation-free. */
    static _Thread_local char text[16];
    if (api == TF_API_UNKNOWN)
        return "unknown";
    if (api < TF_API_COUNT)
        return apis[api].name;
    snprintf(text, sizeof text, "api#%u", api);
    return text;
}

static const char *const kind_names[TF_KIND_MAX] = {
    [TF_REC_HEADER] = "header",
    [TF_REC_FRAME] = "frame",
    [TF_REC_STRING] = "string",
    [TF_REC_MODULE_LOAD] = "module_load",
    [TF_REC_MODULE_UNLOAD] = "module_unload",
    [TF_REC_PY_CODE] = "py_code",
    [TF_REC_NATIVE_STACK] = "native_stack",
    [TF_REC_PY_STACK] = "py_stack",
    [TF_REC_THREAD] = "thread",
    [TF_REC_POOL] = "pool",
    [TF_REC_INFO] = "info",
    [TF_REC_CHECKPOINT] = "checkpoint",
    [TF_REC_COLUMNS] = "columns",
    [TF_REC_PY_STACK_PUSH] = "py_stack_push",
    [TF_REC_PY_STACK_CHAIN] = "py_stack_chain",
    [TF_EV_CUDA_ALLOC] = "cuda_alloc",
    [TF_EV_CUDA_FREE] = "cuda_free",
    [TF_EV_POOL_ALLOC] = "pool_alloc",
    [TF_EV_POOL_FREE] = "pool_free",
    [TF_EV_POOL_OP_BEGIN] = "pool_op_begin",
    [TF_EV_POOL_OP_END] = "pool_op_end",
    [TF_EV_POOL_SEGMENT] = "pool_segment",
    [TF_EV_GC_START] = "gc_start",
    [TF_EV_GC_STOP] = "gc_stop",
    [TF_EV_HOST_ALLOC] = "host_alloc",
    [TF_EV_HOST_FREE] = "host_free",
    [TF_EV_PY_DOUBLE_INIT] = "py_double_init",
    [TF_EV_MARK] = "mark",
    [TF_EV_END] = "end",
    [TF_EV_RELEASE_FAILED] = "release_failed",
    [TF_EV_PY_ALLOC] = "py_alloc",
    [TF_EV_PY_FREE] = "py_free",
};

const char *tf_kind_name(uint32_t kind)
{
    return kind < TF_KIND_MAX ? kind_names[kind] : NULL;
}

static const char *const host_api_names[TF_HOST_API_COUNT] = {
    [TF_HOST_API_UNKNOWN] = "unknown", [TF_HOST_API_MALLOC] = "malloc",
    [TF_HOST_API_CALLOC] = "calloc", [TF_HOST_API_REALLOC] = "realloc",
    [TF_HOST_API_REALLOCARRAY] = "reallocarray", [TF_HOST_API_POSIX_MEMALIGN] = "posix_memalign",
    [TF_HOST_API_ALIGNED_ALLOC] = "aligned_alloc", [TF_HOST_API_MEMALIGN] = "memalign",
    [TF_HOST_API_VALLOC] = "valloc", [TF_HOST_API_PVALLOC] = "pvalloc",
    [TF_HOST_API_FREE] = "free", [TF_HOST_API_MMAP] = "mmap", [TF_HOST_API_MUNMAP] = "munmap",
    [TF_HOST_API_MREMAP] = "mremap", [TF_HOST_API_MAP_REST] = "map_rest",
};

const char *tf_host_api_name(uint32_t api)
{
    static _Thread_local char text[16];
    if (api < TF_HOST_API_COUNT)
        return host_api_names[api];
    snprintf(text, sizeof text, "api#%u", api);
    return text;
}

const char *tf_host_domain_name(uint32_t domain)
{
    static const char *const names[] = { "other", "PyMem RAW", "PyMem MEM", "PyObject", "malloc",
                                         "mmap" };
    return domain < sizeof names / sizeof *names ? names[domain] : "other";
}
