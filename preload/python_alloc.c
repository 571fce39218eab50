/*
 * python_alloc.c - wrappers around the Python allocator domains.
 *
 * Installed after initialisation with PyMem_SetAllocator, each wrapper
 * forwards to the allocator it replaced (so blocks allocated before we came
 * are freed correctly, and PYTHONMALLOC choices are kept).  Wrapping costs an
 * indirect call on every allocation, so we wrap only what is needed:
 *  - large host buffers (python_host.c): the RAW domain.  pymalloc, behind
 *    the MEM and OBJ domains by default, hands every block over 512 bytes to
 *    PyMem_RawMalloc, so RAW sees them all (and reports them as RAW).  Only
 *    when PYTHONMALLOC picks plain malloc do MEM and OBJ need wrappers too;
 *  - the opt-in sample of allocations (TRACE_PY_ALLOCS=N): one py_alloc event
 *    with both stacks every N OBJ-domain allocations (object allocations).
 * The per-generation allocation counters come from the interpreter itself
 * (python_gc.c), at no cost per allocation.
 */
#include "python_internal.h"
#include "config.h"
#include "recorder.h"

#include <stdlib.h>
#include <string.h>

typedef struct domain_wrapper {
    py_allocator prev;
    int domain;
} domain_wrapper;

static domain_wrapper wrappers[3];
/* Set while a large request is inside the allocator it was forwarded to:
 * pymalloc hands large blocks to PyMem_RawMalloc, which is wrapped too, and
 * the block must be recorded once, by the outermost domain. */
static __thread int in_large_request __attribute__((tls_model("initial-exec")));
static uint64_t host_threshold = UINT64_MAX;   /* UINT64_MAX: large buffers off */
static uint32_t sample_every;                  /* OBJ domain: GIL held, no atomics */
static uint32_t sample_countdown;

static void sample_object_allocation(void *p, size_t size)
{
    if (sample_every && --sample_countdown == 0) {
        sample_countdown = sample_every;
        tf_event e = { .kind = TF_EV_PY_ALLOC };
        e.u.host.domain = TF_HOST_OBJ;
        e.u.host.ptr = (uint64_t)(uintptr_t)p;
        e.u.host.size = size;
        rec_event(&e, REC_STACKS);
    }
}

static void after_allocation(const domain_wrapper *w, void *p, size_t size)
{
    if (!p)
        return;
    if (w->domain == PY_DOMAIN_OBJ)
        sample_object_allocation(p, size);
    if (size >= host_threshold && !in_large_request)
        python_host_allocated(w->domain, p, size);
}

/* Brackets the forwarded call of a large request (see in_large_request). */
static int enter_large(size_t size)
{
    if (size < host_threshold || in_large_request)
        return 0;
    in_large_request = 1;
    return 1;
}

static void leave_large(int entered)
{
    if (entered)
        in_large_request = 0;
}

static void *wrapped_malloc(void *ctx, size_t size)
{
    domain_wrapper *w = ctx;
    int entered = enter_large(size);
    void *p = w->prev.malloc(w->prev.ctx, size);
    leave_large(entered);
    after_allocation(w, p, size);
    return p;
}

static void *wrapped_calloc(void *ctx, size_t nelem, size_t elsize)
{
    domain_wrapper *w = ctx;
    int entered = enter_large(nelem * elsize);
    void *p = w->prev.calloc(w->prev.ctx, nelem, elsize);
    leave_large(entered);
    after_allocation(w, p, nelem * elsize);
    return p;
}

/* A realloc of a large buffer is a free and an allocation: the free is
 * recorded before the block can be reused by another thread. */
static void *wrapped_realloc(void *ctx, void *ptr, size_t size)
{
    domain_wrapper *w = ctx;
    uint64_t old_size = ptr && python_host_any_live() ? python_host_releasing(w->domain, ptr) : 0;
    int entered = enter_large(size);
    void *p = w->prev.realloc(w->prev.ctx, ptr, size);
    leave_large(entered);
    if (p)
        after_allocation(w, p, size);
    else if (old_size && size)
        python_host_allocated(w->domain, ptr, old_size);   /* failed: still there */
    return p;
}

static void wrapped_free(void *ctx, void *ptr)
{
    domain_wrapper *w = ctx;
    if (ptr && python_host_any_live())
        python_host_releasing(w->domain, ptr);
    w->prev.free(w->prev.ctx, ptr);
}

static void wrap_domain(int domain)
{
    domain_wrapper *w = &wrappers[domain];
    w->domain = domain;
    py.PyMem_GetAllocator(domain, &w->prev);
    py_allocator ours = { w, wrapped_malloc, wrapped_calloc, wrapped_realloc, wrapped_free };
    py.PyMem_SetAllocator(domain, &ours);
}

/* PYTHONMALLOC=malloc (or malloc_debug): MEM and OBJ go straight to malloc,
 * not through the RAW domain. */
static int python_malloc_bypasses_raw(void)
{
    const char *m = getenv("PYTHONMALLOC");
    return m && strncmp(m, "malloc", 6) == 0;
}

void python_alloc_install(void)
{
    const trace_config *c = trace_config_get();
    if (c->host_buffers)
        host_threshold = c->host_threshold ? c->host_threshold : 1;
    sample_every = c->py_alloc_sample;
    sample_countdown = sample_every;
    int all_domains = c->host_buffers && python_malloc_bypasses_raw();
    if (c->host_buffers)
        wrap_domain(PY_DOMAIN_RAW);
    if (all_domains)
        wrap_domain(PY_DOMAIN_MEM);
    if (all_domains || sample_every)
        wrap_domain(PY_DOMAIN_OBJ);
}
