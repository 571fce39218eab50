/*
 * cuda_hooks.c - the memory entry points: one cuda_alloc or cuda_free event
 * per call.  An allocation is recorded after the real call returns (failed
 * ones too, with their code); a release before the real call is made, and a
 * release that then fails gets a release_failed event after it
 * (cuda_record.h says why).
 *
 * What goes where (docs/cuda.md has the table):
 *   allocations, reservations, creates, maps  -> cuda_alloc
 *   frees, releases, unmaps, address frees     -> cuda_free
 *   ptr: the pointer or VA; for cuMemCreate/cuMemRelease the allocation handle.
 *   size: bytes (pitch allocations: pitch * height); frees of unknown size: 0.
 *   stream: the stream; for cuMemMap the allocation handle mapped.
 *   flags: the call's flags argument, else 0.
 * Teardowns (a context's memory freed wholesale) -> cuda_free of space
 *   context, ptr 0 (no address: what reads ptr as one is left alone),
 *   stream the context for cuCtxDestroy, device the one whose memory went
 *   (-1 unknown).
 */
#include "cuda_hooks.h"
#include "cuda_record.h"
#include "trace_format.h"

#define CALL(type, args) (real ? ((type)real)args : CUDA_NO_REAL)

static uint64_t out_ptr(int r, void **p)
{
    return r == 0 && p ? (uint64_t)(uintptr_t)*p : 0;
}

static uint64_t out_dptr(int r, const cu_deviceptr *p)
{
    return r == 0 && p ? *p : 0;
}

static void alloc_event(uint32_t api, int r, uint64_t ptr, uint64_t size, const void *stream,
                        uint64_t flags)
{
    cuda_record(&(struct cuda_call_record){
        .kind = TF_EV_CUDA_ALLOC, .api = api, .result = r, .device = CUDA_DEVICE_CURRENT,
        .ptr = ptr, .size = size, .stream = (uint64_t)(uintptr_t)stream, .flags = (uint32_t)flags });
}

/* Before a release's real call (outer: the outermost traced call). */
static uint64_t release(int outer, uint32_t api, int device, uint64_t ptr, uint64_t size,
                        uint64_t stream)
{
    if (!outer)
        return 0;
    return cuda_record(&(struct cuda_call_record){
        .kind = TF_EV_CUDA_FREE, .api = api, .device = device, .ptr = ptr, .size = size,
        .stream = stream });
}

static uint64_t free_event(int outer, uint32_t api, uint64_t ptr, const void *stream)
{
    return release(outer, api, CUDA_DEVICE_CURRENT, ptr, 0, (uint64_t)(uintptr_t)stream);
}

/* After it: the outcome, when the call failed. */
static int released(uint64_t seq, int r)
{
    if (r != 0)
        cuda_record_release_failed(seq, r);
    cuda_call_end();
    return r;
}

/* ------------------------------------------------------------- runtime */

int cuda_hook_cudaMalloc(void *real, void **p, size_t size)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t), (p, size));
    if (outer)
        alloc_event(TF_API_cudaMalloc, r, out_ptr(r, p), size, NULL, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cudaFree(void *real, void *p)
{
    int outer = cuda_call_begin();
    uint64_t seq = free_event(outer, TF_API_cudaFree, (uintptr_t)p, NULL);
    return released(seq, CALL(int (*)(void *), (p)));
}

int cuda_hook_cudaMallocAsync(void *real, void **p, size_t size, cu_stream s)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t, cu_stream), (p, size, s));
    if (outer)
        alloc_event(TF_API_cudaMallocAsync, r, out_ptr(r, p), size, s, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cudaFreeAsync(void *real, void *p, cu_stream s)
{
    int outer = cuda_call_begin();
    uint64_t seq = free_event(outer, TF_API_cudaFreeAsync, (uintptr_t)p, s);
    return released(seq, CALL(int (*)(void *, cu_stream), (p, s)));
}

int cuda_hook_cudaMallocManaged(void *real, void **p, size_t size, unsigned flags)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t, unsigned), (p, size, flags));
    if (outer)
        alloc_event(TF_API_cudaMallocManaged, r, out_ptr(r, p), size, NULL, flags);
    cuda_call_end();
    return r;
}

int cuda_hook_cudaMallocHost(void *real, void **p, size_t size)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t), (p, size));
    if (outer)
        alloc_event(TF_API_cudaMallocHost, r, out_ptr(r, p), size, NULL, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cudaHostAlloc(void *real, void **p, size_t size, unsigned flags)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t, unsigned), (p, size, flags));
    if (outer)
        alloc_event(TF_API_cudaHostAlloc, r, out_ptr(r, p), size, NULL, flags);
    cuda_call_end();
    return r;
}

int cuda_hook_cudaFreeHost(void *real, void *p)
{
    int outer = cuda_call_begin();
    uint64_t seq = free_event(outer, TF_API_cudaFreeHost, (uintptr_t)p, NULL);
    return released(seq, CALL(int (*)(void *), (p)));
}

int cuda_hook_cudaMallocPitch(void *real, void **p, size_t *pitch, size_t width, size_t height)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t *, size_t, size_t), (p, pitch, width, height));
    if (outer)
        alloc_event(TF_API_cudaMallocPitch, r, out_ptr(r, p),
                    (r == 0 && pitch ? *pitch : width) * height, NULL, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cudaMallocFromPoolAsync(void *real, void **p, size_t size, cu_mempool pool,
                                      cu_stream s)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t, cu_mempool, cu_stream), (p, size, pool, s));
    if (outer)
        alloc_event(TF_API_cudaMallocFromPoolAsync, r, out_ptr(r, p), size, s, 0);
    cuda_call_end();
    return r;
}

/* -------------------------------------------------------------- driver */

int cuda_hook_cuMemAlloc_v2(void *real, cu_deviceptr *p, size_t size)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_deviceptr *, size_t), (p, size));
    if (outer)
        alloc_event(TF_API_cuMemAlloc_v2, r, out_dptr(r, p), size, NULL, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemFree_v2(void *real, cu_deviceptr p)
{
    int outer = cuda_call_begin();
    uint64_t seq = free_event(outer, TF_API_cuMemFree_v2, p, NULL);
    return released(seq, CALL(int (*)(cu_deviceptr), (p)));
}

int cuda_hook_cuMemAllocAsync(void *real, cu_deviceptr *p, size_t size, cu_stream s)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_deviceptr *, size_t, cu_stream), (p, size, s));
    if (outer)
        alloc_event(TF_API_cuMemAllocAsync, r, out_dptr(r, p), size, s, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemFreeAsync(void *real, cu_deviceptr p, cu_stream s)
{
    int outer = cuda_call_begin();
    uint64_t seq = free_event(outer, TF_API_cuMemFreeAsync, p, s);
    return released(seq, CALL(int (*)(cu_deviceptr, cu_stream), (p, s)));
}

int cuda_hook_cuMemAllocFromPoolAsync(void *real, cu_deviceptr *p, size_t size, cu_mempool pool,
                                      cu_stream s)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_deviceptr *, size_t, cu_mempool, cu_stream), (p, size, pool, s));
    if (outer)
        alloc_event(TF_API_cuMemAllocFromPoolAsync, r, out_dptr(r, p), size, s, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemAllocManaged(void *real, cu_deviceptr *p, size_t size, unsigned flags)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_deviceptr *, size_t, unsigned), (p, size, flags));
    if (outer)
        alloc_event(TF_API_cuMemAllocManaged, r, out_dptr(r, p), size, NULL, flags);
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemAllocPitch_v2(void *real, cu_deviceptr *p, size_t *pitch, size_t width,
                                 size_t height, unsigned elem)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_deviceptr *, size_t *, size_t, size_t, unsigned),
                 (p, pitch, width, height, elem));
    if (outer)
        alloc_event(TF_API_cuMemAllocPitch_v2, r, out_dptr(r, p),
                    (r == 0 && pitch ? *pitch : width) * height, NULL, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemAllocHost_v2(void *real, void **p, size_t size)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t), (p, size));
    if (outer)
        alloc_event(TF_API_cuMemAllocHost_v2, r, out_ptr(r, p), size, NULL, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemHostAlloc(void *real, void **p, size_t size, unsigned flags)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, size_t, unsigned), (p, size, flags));
    if (outer)
        alloc_event(TF_API_cuMemHostAlloc, r, out_ptr(r, p), size, NULL, flags);
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemFreeHost(void *real, void *p)
{
    int outer = cuda_call_begin();
    uint64_t seq = free_event(outer, TF_API_cuMemFreeHost, (uintptr_t)p, NULL);
    return released(seq, CALL(int (*)(void *), (p)));
}

int cuda_hook_cuMemCreate(void *real, cu_mem_handle *h, size_t size, const cu_mem_alloc_prop *prop,
                          unsigned long long flags)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_mem_handle *, size_t, const cu_mem_alloc_prop *, unsigned long long),
                 (h, size, prop, flags));
    if (outer)
        cuda_record(&(struct cuda_call_record){
            .kind = TF_EV_CUDA_ALLOC, .api = TF_API_cuMemCreate, .result = r,
            .device = prop ? prop->location.id : -1, .ptr = r == 0 && h ? *h : 0, .size = size,
            .flags = (uint32_t)flags });
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemRelease(void *real, cu_mem_handle h)
{
    int outer = cuda_call_begin();
    uint64_t seq = release(outer, TF_API_cuMemRelease, -1, h, 0, 0);
    return released(seq, CALL(int (*)(cu_mem_handle), (h)));
}

int cuda_hook_cuMemMap(void *real, cu_deviceptr p, size_t size, size_t offset, cu_mem_handle h,
                       unsigned long long flags)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_deviceptr, size_t, size_t, cu_mem_handle, unsigned long long),
                 (p, size, offset, h, flags));
    if (outer)
        cuda_record(&(struct cuda_call_record){
            .kind = TF_EV_CUDA_ALLOC, .api = TF_API_cuMemMap, .result = r, .device = -1,
            .ptr = p, .size = size, .stream = h, .flags = (uint32_t)flags });
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemUnmap(void *real, cu_deviceptr p, size_t size)
{
    int outer = cuda_call_begin();
    uint64_t seq = release(outer, TF_API_cuMemUnmap, -1, p, size, 0);
    return released(seq, CALL(int (*)(cu_deviceptr, size_t), (p, size)));
}

int cuda_hook_cuMemAddressReserve(void *real, cu_deviceptr *p, size_t size, size_t align,
                                  cu_deviceptr addr, unsigned long long flags)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_deviceptr *, size_t, size_t, cu_deviceptr, unsigned long long),
                 (p, size, align, addr, flags));
    if (outer)
        cuda_record(&(struct cuda_call_record){
            .kind = TF_EV_CUDA_ALLOC, .api = TF_API_cuMemAddressReserve, .result = r,
            .device = -1, .ptr = out_dptr(r, p), .size = size, .flags = (uint32_t)flags });
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemAddressFree(void *real, cu_deviceptr p, size_t size)
{
    int outer = cuda_call_begin();
    uint64_t seq = release(outer, TF_API_cuMemAddressFree, -1, p, size, 0);
    return released(seq, CALL(int (*)(cu_deviceptr, size_t), (p, size)));
}

/* ------------------------------------------- memory made somewhere else */

/* Handles and pointers to memory this process did not make with a traced
 * call, released with one that is traced (cuMemRelease, cuMemFreeAsync,
 * cudaFreeAsync): untraced, each release named something the log never
 * handed out, a false free_unknown (or, for a handle retained after its
 * release, a false double_free).  Recorded as allocations of unknown size
 * (0): the replay's bookkeeping then matches the release, and a retain of
 * a handle still live is one more reference to it, not a second handle. */

int cuda_hook_cuMemRetainAllocationHandle(void *real, cu_mem_handle *h, void *addr)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_mem_handle *, void *), (h, addr));
    if (outer)
        cuda_record(&(struct cuda_call_record){
            .kind = TF_EV_CUDA_ALLOC, .api = TF_API_cuMemRetainAllocationHandle, .result = r,
            .device = -1, .ptr = r == 0 && h ? *h : 0 });
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemImportFromShareableHandle(void *real, cu_mem_handle *h, void *os_handle, int type)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_mem_handle *, void *, int), (h, os_handle, type));
    if (outer)
        cuda_record(&(struct cuda_call_record){
            .kind = TF_EV_CUDA_ALLOC, .api = TF_API_cuMemImportFromShareableHandle, .result = r,
            .device = -1, .ptr = r == 0 && h ? *h : 0, .flags = (uint32_t)type });
    cuda_call_end();
    return r;
}

int cuda_hook_cuMemPoolImportPointer(void *real, cu_deviceptr *p, cu_mempool pool, void *data)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(cu_deviceptr *, cu_mempool, void *), (p, pool, data));
    if (outer)
        alloc_event(TF_API_cuMemPoolImportPointer, r, out_dptr(r, p), 0, NULL, 0);
    cuda_call_end();
    return r;
}

int cuda_hook_cudaMemPoolImportPointer(void *real, void **p, cu_mempool pool, void *data)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(void **, cu_mempool, void *), (p, pool, data));
    if (outer)
        alloc_event(TF_API_cudaMemPoolImportPointer, r, out_ptr(r, p), 0, NULL, 0);
    cuda_call_end();
    return r;
}

/* ------------------------------------------------------------ teardowns */

/* A device reset, a primary context's reset or last release, a context
 * destroyed: the driver frees the context's memory (device, managed and
 * pinned host allocations) with no free call, and hands the same addresses
 * out again.  Untraced, the next allocation there was a false overlap, and
 * the memory a false leak.  Each is recorded as a release (before the call,
 * like a free, so it comes before any allocation that reuses the memory)
 * naming the device whose memory went; the replay forgets that device's
 * blocks.  A failed call is recorded as a failed release, and the replay
 * still takes the blocks for gone: a reset also reports errors of earlier
 * launches, and a block wrongly forgotten costs a leak, never a finding.
 * Teardowns made once exit() has begun (a runtime's exit handlers may
 * release its primary contexts) are not recorded: what is live then is what
 * the program never freed, and the log says so at its end. */

static int teardown_recorded(int outer)
{
    return outer && !cuda_exit_begun();
}

int cuda_hook_cudaDeviceReset(void *real)
{
    int outer = cuda_call_begin();
    uint64_t seq = release(teardown_recorded(outer), TF_API_cudaDeviceReset, CUDA_DEVICE_CURRENT, 0, 0, 0);
    return released(seq, CALL(int (*)(void), ()));
}

int cuda_hook_cudaThreadExit(void *real)
{
    int outer = cuda_call_begin();
    uint64_t seq = release(teardown_recorded(outer), TF_API_cudaThreadExit, CUDA_DEVICE_CURRENT, 0, 0, 0);
    return released(seq, CALL(int (*)(void), ()));
}

static int primary_reset(void *real, uint32_t api, int dev)
{
    int outer = cuda_call_begin();
    uint64_t seq = release(teardown_recorded(outer), api, dev, 0, 0, 0);
    return released(seq, CALL(int (*)(int), (dev)));
}

int cuda_hook_cuDevicePrimaryCtxReset(void *real, int dev)
{
    return primary_reset(real, TF_API_cuDevicePrimaryCtxReset, dev);
}

int cuda_hook_cuDevicePrimaryCtxReset_v2(void *real, int dev)
{
    return primary_reset(real, TF_API_cuDevicePrimaryCtxReset_v2, dev);
}

/* Only the last release of a primary context destroys it, and the count of
 * retains is the driver's (the runtime's own are not in the log): after a
 * release that succeeded, the context's state says.  Recorded after the
 * call, so another thread's allocation made between the two may come
 * first in the log. */
static int primary_release(void *real, uint32_t api, int dev)
{
    int outer = cuda_call_begin();
    int r = CALL(int (*)(int), (dev));
    if (teardown_recorded(outer) && r == 0 && cuda_primary_active(dev) != 1)
        cuda_record(&(struct cuda_call_record){.kind = TF_EV_CUDA_FREE, .api = api, .device = dev});
    cuda_call_end();
    return r;
}

int cuda_hook_cuDevicePrimaryCtxRelease(void *real, int dev)
{
    return primary_release(real, TF_API_cuDevicePrimaryCtxRelease, dev);
}

int cuda_hook_cuDevicePrimaryCtxRelease_v2(void *real, int dev)
{
    return primary_release(real, TF_API_cuDevicePrimaryCtxRelease_v2, dev);
}

/* The device of a context not current on this thread is unknown (-1): the
 * replay then forgets every device's blocks. */
static int ctx_destroy(void *real, uint32_t api, cu_context ctx)
{
    int outer = teardown_recorded(cuda_call_begin());
    uint64_t seq = release(outer, api, outer ? cuda_context_device(ctx) : -1, 0, 0, (uintptr_t)ctx);
    return released(seq, CALL(int (*)(cu_context), (ctx)));
}

int cuda_hook_cuCtxDestroy(void *real, cu_context ctx)
{
    return ctx_destroy(real, TF_API_cuCtxDestroy, ctx);
}

int cuda_hook_cuCtxDestroy_v2(void *real, cu_context ctx)
{
    return ctx_destroy(real, TF_API_cuCtxDestroy_v2, ctx);
}
