/*
 * host_blocks.c - the set of live large host blocks, and their events.
 *
 * A pointer lives in a fixed window of slots after its hash; a per-window
 * count lets the common case (a block that is not large) answer with one
 * load.  Insert and remove are compare-and-swap on the slot, so any thread,
 * a signal handler, or a child after fork finds the set usable.  When a
 * window is full the block is not tracked, and a not_watched INFO record
 * says so once.
 *
 * A block allocated at an address the set still holds means its release went
 * through a path we do not see (a C library function that reallocs or frees
 * the caller's buffer internally, an allocator linked into the program): the
 * old entry is recorded as released then, and a not_watched record says so,
 * so the log never shows two live blocks at one address.
 */
#include "host_blocks.h"
#include "config.h"
#include "dl_hooks.h"
#include "dl_lookup.h"
#include "native_stack.h"
#include "python_api.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define LIVE_SLOTS 32768u         /* power of two */
#define WINDOW 16u                /* slots probed after the hash */
#define PENDING_GAPS 16

__thread int host_guard __attribute__((tls_model("initial-exec")));
uint64_t host_threshold = UINT64_MAX;
_Atomic unsigned host_live;

static _Atomic uintptr_t live_ptr[LIVE_SLOTS + WINDOW];
static uint64_t live_size[LIVE_SLOTS + WINDOW];
static uint32_t live_domain[LIVE_SLOTS + WINDOW];
static _Atomic uint32_t window_live[LIVE_SLOTS];

static uint32_t window_of(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 49) & (LIVE_SLOTS - 1);
}

int host_block_maybe_live(const void *p)
{
    return atomic_load_explicit(&window_live[window_of(p)], memory_order_relaxed) != 0;
}

/* ------------------------------------------------------------------ gaps */

/* Gaps are told once each (by their `what` text) as INFO records with the key
 * "not_watched" and the value "WHAT: WHY": a definition, not an event, so a
 * process that records nothing still leaves no log.  Those found before the
 * recorder runs wait in gaps[] for host_blocks_start(); a forked child's new
 * log gets them all again. */
static struct { const char *_Atomic what; const char *why; } gaps[PENDING_GAPS];
static _Atomic int started;

static void record_gap(const char *what, const char *why)
{
    char text[512];
    size_t n = strlen(what);
    if (n > sizeof text - 3)
        n = sizeof text - 3;
    memcpy(text, what, n);
    text[n++] = ':';
    text[n++] = ' ';
    size_t m = strlen(why);
    if (m > sizeof text - 1 - n)
        m = sizeof text - 1 - n;
    memcpy(text + n, why, m);
    text[n + m] = '\0';
    host_guard_enter();
    rec_info("not_watched", text);
    host_guard_leave();
}

static void record_all_gaps(void)
{
    for (int i = 0; i < PENDING_GAPS; i++) {
        const char *what = atomic_load(&gaps[i].what);
        if (what)
            record_gap(what, gaps[i].why);
    }
}

void host_gap(const char *what, const char *why)
{
    for (int i = 0; i < PENDING_GAPS; i++) {
        const char *expected = NULL;
        if (atomic_load(&gaps[i].what) == what)
            return;
        if (atomic_compare_exchange_strong(&gaps[i].what, &expected, what)) {
            gaps[i].why = why;
            if (atomic_load(&started))
                record_gap(what, why);
            return;
        }
        if (expected == what)
            return;
    }
}

/* ---------------------------------------------------------------- events */

void host_record(uint32_t kind, uint32_t domain, uint32_t api, void *p, uint64_t size)
{
    tf_event e;
    tf_event_init(&e, kind);
    e.u.host.domain = domain;
    e.u.host.api = api;
    e.u.host.ptr = (uint64_t)(uintptr_t)p;
    e.u.host.size = size;
    host_guard_enter();
    /* greenlet frees its stack copies inside a switch (python_greenlet.h);
     * nothing is allocated there. */
    rec_event(&e, REC_STACKS | (kind == TF_EV_HOST_FREE ? REC_PY_CHECKED : 0));
    host_guard_leave();
}

static const char missed_what[] = "releases of large host blocks";
static const char missed_why[] =
    "a tracked block was released through a path the tracer does not see (a C library "
    "function that reallocs or frees its caller's buffer internally, or an allocator linked "
    "into the program); it is recorded as released when its address is reused";
static const char full_what[] = "some large host blocks";
static const char full_why[] = "too many live at once to track them all: those are not recorded";

/* The slot holding p in its window, or NULL. */
static _Atomic uintptr_t *slot_of(const void *p, uint32_t w)
{
    for (uint32_t i = 0; i < WINDOW; i++)
        if (atomic_load_explicit(&live_ptr[w + i], memory_order_relaxed) == (uintptr_t)p)
            return &live_ptr[w + i];
    return NULL;
}

static int take(_Atomic uintptr_t *slot, const void *p, uint32_t w)
{
    uintptr_t expected = (uintptr_t)p;
    if (!atomic_compare_exchange_strong(slot, &expected, 0))
        return 0;
    atomic_fetch_sub(&window_live[w], 1);
    atomic_fetch_sub(&host_live, 1);
    return 1;
}

void host_block_allocated(uint32_t domain, uint32_t api, void *p, uint64_t size)
{
    if (!p || !rec_active())
        return;
    uint32_t w = window_of(p);
    _Atomic uintptr_t *stale = slot_of(p, w);
    if (stale) {
        size_t i = (size_t)(stale - live_ptr);
        uint64_t old_size = live_size[i];
        uint32_t old_domain = live_domain[i];
        if (take(stale, p, w)) {
            host_gap(missed_what, missed_why);
            host_record(TF_EV_HOST_FREE, old_domain, TF_HOST_API_UNKNOWN, p, old_size);
        }
    }
    atomic_fetch_add(&window_live[w], 1);
    for (uint32_t i = 0; i < WINDOW; i++) {
        uintptr_t empty = 0;
        if (atomic_compare_exchange_strong(&live_ptr[w + i], &empty, (uintptr_t)p)) {
            live_size[w + i] = size;
            live_domain[w + i] = domain;
            atomic_fetch_add(&host_live, 1);
            host_record(TF_EV_HOST_ALLOC, domain, api, p, size);
            return;
        }
    }
    atomic_fetch_sub(&window_live[w], 1);
    host_gap(full_what, full_why);
}

uint64_t host_block_releasing(uint32_t api, void *p, uint32_t *domain)
{
    uint32_t w = window_of(p);
    if (atomic_load_explicit(&window_live[w], memory_order_relaxed) == 0)
        return 0;
    _Atomic uintptr_t *slot = slot_of(p, w);
    if (!slot)
        return 0;
    size_t i = (size_t)(slot - live_ptr);
    uint64_t size = live_size[i];
    uint32_t dom = live_domain[i];
    if (!take(slot, p, w))
        return 0;               /* another thread released it first */
    if (domain)
        *domain = dom;
    host_record(TF_EV_HOST_FREE, dom, api, p, size);
    return size;
}

/* ----------------------------------------------------------- life cycle */

/* Which processes record large host blocks: Python and CUDA programs, what
 * this tool traces, and any process when TRACE_HOST_BUFFERS=1 says so.  A
 * process run under the preload on the way to the real program (a shell, a
 * compiler, trace-dump itself) records nothing and so leaves no log, even
 * if it allocates large blocks.  A process that loads Python or CUDA later
 * (dlopen) starts recording then.  The CUDA names are looked for in every
 * object but ours (the program, where nvcc links the runtime statically by
 * default, and the libraries before and after libtrace.so), in their own
 * symbol tables: each miss of dlsym's, at each dlopen of a process without
 * CUDA, was an error message made through the program's malloc. */
static int process_wanted(void)
{
    const char *setting = getenv("TRACE_HOST_BUFFERS");
    if (setting && !strcmp(setting, "1"))
        return 1;
    return py_sym("PySys_AddAuditHook") || dl_lookup_any("cuInit") || dl_lookup_any("cudaMalloc");
}

static _Atomic int armed;
static uint64_t configured_threshold = UINT64_MAX;

static void arm(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&armed, &expected, 1))
        return;
    host_threshold = configured_threshold;
    host_malloc_start();
    host_mmap_start();
}

void host_start(void)
{
    const trace_config *c = trace_config_get();
    configured_threshold = c->host_buffers ? (c->host_threshold ? c->host_threshold : 1) : UINT64_MAX;
    atomic_store(&started, 1);
    record_all_gaps();
    if (!c->host_buffers)
        host_gap("large host blocks", "TRACE_HOST_BUFFERS=0: not recorded");
    else if (process_wanted())
        arm();
}

void host_on_dlopen(void)
{
    if (!atomic_load(&armed) && atomic_load(&started) && configured_threshold != UINT64_MAX &&
        process_wanted())
        arm();
}

void host_fork_child(void)
{
    host_mmap_fork_child();
    /* The child's log starts empty: a release of a block the parent
     * allocated would name an address this log never saw allocated. */
    memset((void *)live_ptr, 0, sizeof live_ptr);
    memset((void *)window_live, 0, sizeof window_live);
    atomic_store(&host_live, 0);
    record_all_gaps();   /* into the child's own log */
}
