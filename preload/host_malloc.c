/*
 * host_malloc.c - the C heap's large blocks: malloc, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc and
 * free, interposed.
 *
 * NumPy (on some versions), PyTorch's CPU tensors and most C extensions take
 * their buffers from here, not from Python's allocators.  Every call goes to
 * the allocator that would have served it without us (the next definition
 * after libtrace.so: glibc's, or jemalloc/tcmalloc preloaded after us); a
 * block of at least TRACE_HOST_THRESHOLD bytes is recorded with both stacks.
 *
 * Cost.  A small malloc is one compare and a jump to the real one.  A free
 * must know whether its block is large without a lock or a hash lookup: with
 * glibc's allocator the chunk's size word sits just before the block (the
 * same word malloc_usable_size reads, and free is about to read it anyway),
 * so a free of a small block costs one load and a compare.  Under another
 * allocator we do not know the layout: a free then consults the set's window
 * count, and every call sets host_guard, so mmap calls that allocator makes
 * for its own arenas are not taken for the application's.
 *
 * Start-up.  The real functions are found with dlsym(RTLD_NEXT) on the first
 * call, which may come from the loader before any constructor ran.  dlsym
 * itself may allocate (glibc's error state): calls made while we resolve are
 * served from a small static arena whose blocks are never handed to the real
 * free.
 */

#include "host_blocks.h"
#include "dl_hooks.h"
#include "dl_object.h"
#include "native_stack.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

typedef struct real_heap {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
} real_heap;

static real_heap real;
enum { UNRESOLVED, RESOLVING, READY };
static _Atomic int state;
/* glibc's allocator is next: its chunk headers can be read, and it makes no
 * interposable calls of its own. */
static int glibc_heap;
/* Requests below this go straight through: 0 until resolved and started,
 * then TRACE_HOST_THRESHOLD with glibc (else 0: every call sets the guard). */
static _Atomic size_t fast_below;
/* free() may read glibc's size word (resolved, glibc, started). */
static _Atomic int fast_free;

/* ---------------------------------------------------------- boot arena */

#define BOOT_BYTES (128u * 1024u)
#define BOOT_HEADER 16u
static _Alignas(64) unsigned char boot_arena[BOOT_BYTES];
static _Atomic size_t boot_used;

static int in_boot(const void *p)
{
    return (uintptr_t)p - (uintptr_t)boot_arena < BOOT_BYTES;
}

static void *boot_alloc(size_t size, size_t align)
{
    if (align < BOOT_HEADER)
        align = BOOT_HEADER;
    if (size > BOOT_BYTES || align > BOOT_BYTES / 4)
        return NULL;
    size_t used = atomic_load(&boot_used), start;
    do {
        start = (used + BOOT_HEADER + align - 1) & ~(align - 1);
        if (start + size > BOOT_BYTES)
            return NULL;
    } while (!atomic_compare_exchange_weak(&boot_used, &used, start + size));
    memcpy(boot_arena + start - sizeof(size_t), &size, sizeof size);
    return boot_arena + start;   /* zeroed: the arena is static and never reused */
}

static size_t boot_size(const void *p)
{
    size_t size;
    memcpy(&size, (const unsigned char *)p - sizeof size, sizeof size);
    return size;
}

/* ----------------------------------------------------------- resolving */

#define NEXT(field, name) (*(void **)&real.field = dl_real_dlsym(RTLD_NEXT, name))

static int resolve(void)
{
    int expected = UNRESOLVED;
    if (atomic_load(&state) == READY)
        return 1;
    if (!atomic_compare_exchange_strong(&state, &expected, RESOLVING))
        return 0;                /* another thread (or this one, re-entered) resolving */
    NEXT(malloc, "malloc");
    NEXT(calloc, "calloc");
    NEXT(realloc, "realloc");
    NEXT(reallocarray, "reallocarray");
    NEXT(free, "free");
    NEXT(posix_memalign, "posix_memalign");
    NEXT(aligned_alloc, "aligned_alloc");
    NEXT(memalign, "memalign");
    NEXT(valloc, "valloc");
    NEXT(pvalloc, "pvalloc");
    /* Older or smaller C libraries may lack the obsolete ones: memalign
     * serves them (and posix_memalign serves memalign). */
    /* dl_object_file, not dladdr: dladdr's symbol search was 88,000 of the
     * 650,000 instructions a traced /bin/true spent in libtrace.so. */
    const char *file = real.malloc ? dl_object_file((void *)real.malloc) : NULL;
    if (file) {
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        glibc_heap = strncmp(base, "libc.so", 7) == 0 && real.free == dl_real_dlsym(RTLD_NEXT, "free");
    }
    if (!real.malloc || !real.calloc || !real.realloc || !real.free) {
        atomic_store(&state, UNRESOLVED);   /* no allocator after us: stay on the arena */
        return 0;
    }
    atomic_store(&state, READY);
    return 1;
}

static int ready(void)
{
    return atomic_load_explicit(&state, memory_order_acquire) == READY || resolve();
}

/* ------------------------------------------------------------ recording */

/* Another malloc and free come before ours (host_malloc_start): the few
 * entry points that allocator lacks (jemalloc has no pvalloc, tcmalloc no
 * reallocarray) still reach us, but their blocks are released through a
 * free we never see: recorded, each would be a block that lives for ever. */
static _Atomic int family_not_ours;
/* The program's malloc and free are these (host_malloc_start). */
static _Atomic int family_ours;

/* Should a block of this size, from this caller, be recorded? */
static int wanted(size_t size, const void *caller)
{
    return size >= host_threshold && !host_guard &&
           !atomic_load_explicit(&family_not_ours, memory_order_relaxed) &&
           !native_stack_is_ours((uintptr_t)caller);
}

static void allocated(uint32_t api, void *p, size_t size)
{
    host_block_allocated(TF_HOST_MALLOC, api, p, size);
}

/* Releases p if it is a tracked block (before the real call). */
static uint64_t releasing(uint32_t api, void *p)
{
    if (!p || host_guard || !host_any_live())
        return 0;
    return host_block_releasing(api, p, NULL);
}

/* glibc: the chunk's size word, just before the block. */
__attribute__((no_sanitize("address")))
static size_t glibc_chunk_size(const void *p)
{
    return ((const size_t *)p)[-1] & ~(size_t)7;
}

/* Could p be a tracked block?  The fast test of free and realloc. */
static inline int maybe_large(const void *p)
{
    if (!p || !host_any_live())
        return 0;
    if (atomic_load_explicit(&fast_free, memory_order_relaxed))
        return glibc_chunk_size(p) >= host_threshold;
    return 1;
}

/* Forward with the guard set when the allocator underneath may call mmap
 * through the PLT (anything but glibc). */
#define FORWARD(call)                          \
    ({                                         \
        host_guard_enter();                    \
        __typeof__(call) r_ = (call);          \
        host_guard_leave();                    \
        r_;                                    \
    })

/* ---------------------------------------------------------------- entry */

/* host_malloc_start's probe (reaches_us): counts the calls that reached
 * malloc_slow, or free_slow with NULL, on this thread while it is set.
 * Before start both hooks take their slow paths. */
static __thread __attribute__((tls_model("initial-exec"))) int probing, probe_hits;

__attribute__((noinline)) static void *malloc_slow(size_t size, const void *caller)
{
    if (__builtin_expect(probing, 0))
        probe_hits++;
    if (!ready())
        return boot_alloc(size, 16);
    void *p = FORWARD(real.malloc(size));
    if (p && wanted(size, caller))
        allocated(TF_HOST_API_MALLOC, p, size);
    return p;
}

/* A fresh block's first word is cleared.  Its contents are indeterminate,
 * so nothing can rely on them, but they may be the header of an object that
 * lived there (an object freed with its count at 1, or a copy of one, whose
 * chunk the allocator merged without writing into it): an extension that
 * then calls PyObject_Init on the block would look like a double
 * initialisation (python_init_check.c).  It would be a false finding; a
 * zero reference count never looks initialised. */
static inline void *fresh(void *p, size_t size)
{
    if (__builtin_expect(p != NULL && size >= sizeof(uintptr_t), 1))
        *(uintptr_t *)p = 0;
    return p;
}

static void *hook_malloc(size_t size)
{
    if (__builtin_expect(size < atomic_load_explicit(&fast_below, memory_order_acquire), 1))
        return fresh(real.malloc(size), size);
    return fresh(malloc_slow(size, __builtin_return_address(0)), size);
}

__attribute__((noinline)) static void free_slow(void *p)
{
    if (!p) {
        if (__builtin_expect(probing, 0))
            probe_hits++;
        return;
    }
    if (in_boot(p))
        return;
    if (!ready())
        return;                  /* cannot happen: p came from somewhere */
    releasing(TF_HOST_API_FREE, p);
    FORWARD((real.free(p), 0));
}

static void hook_free(void *p)
{
    if (__builtin_expect(atomic_load_explicit(&fast_free, memory_order_acquire) && !in_boot(p) &&
                         !maybe_large(p), 1)) {
        real.free(p);
        return;
    }
    free_slow(p);
}

__attribute__((noinline)) static void *calloc_slow(size_t n, size_t each, const void *caller)
{
    size_t size;
    int overflow = __builtin_mul_overflow(n, each, &size);
    if (!ready())
        return overflow ? NULL : boot_alloc(size, 16);
    if (overflow)
        size = 0;                /* the real calloc fails it */
    void *p = FORWARD(real.calloc(n, each));
    if (p && wanted(size, caller))
        allocated(TF_HOST_API_CALLOC, p, size);
    return p;
}

static void *hook_calloc(size_t n, size_t each)
{
    size_t size;
    if (__builtin_expect(!__builtin_mul_overflow(n, each, &size) &&
                         size < atomic_load_explicit(&fast_below, memory_order_acquire), 1))
        return real.calloc(n, each);
    return calloc_slow(n, each, __builtin_return_address(0));
}

/* A realloc of a tracked block is its release then a new allocation (the
 * release first: the old address may be reused the moment realloc returns). */
__attribute__((noinline)) static void *realloc_slow(void *p, size_t size, const void *caller)
{
    if (!ready() || in_boot(p)) {
        if (!in_boot(p))
            return boot_alloc(size, 16);
        /* A boot block grows into a real one (or a bigger boot block). */
        void *q = ready() ? FORWARD(real.malloc(size ? size : 1)) : boot_alloc(size, 16);
        if (q) {
            size_t old = boot_size(p);
            memcpy(q, p, old < size ? old : size);
        }
        return q;
    }
    uint64_t old = releasing(TF_HOST_API_REALLOC, p);
    void *q = FORWARD(real.realloc(p, size));
    if (q) {
        if (wanted(size, caller))
            allocated(TF_HOST_API_REALLOC, q, size);
    } else if (old && size) {
        allocated(TF_HOST_API_REALLOC, p, old);   /* failed: the block is still there */
    }
    return q;
}

static void *hook_realloc(void *p, size_t size)
{
    if (__builtin_expect(size < atomic_load_explicit(&fast_below, memory_order_acquire) &&
                         !in_boot(p) && !maybe_large(p), 1))
        return real.realloc(p, size);
    return realloc_slow(p, size, __builtin_return_address(0));
}

static void *hook_reallocarray(void *p, size_t n, size_t each)
{
    size_t size;
    if (__builtin_mul_overflow(n, each, &size)) {
        errno = ENOMEM;
        return NULL;
    }
    const void *caller = __builtin_return_address(0);
    if (!ready() || in_boot(p) || !real.reallocarray)
        return realloc_slow(p, size, caller);
    uint64_t old = releasing(TF_HOST_API_REALLOCARRAY, p);
    void *q = FORWARD(real.reallocarray(p, n, each));
    if (q) {
        if (wanted(size, caller))
            allocated(TF_HOST_API_REALLOCARRAY, q, size);
    } else if (old && size) {
        allocated(TF_HOST_API_REALLOCARRAY, p, old);
    }
    return q;
}

/* The aligned family: never on a hot path, one shape each. */
static void *aligned(uint32_t api, void *p, size_t size, const void *caller)
{
    fresh(p, size);
    if (p && wanted(size, caller))
        allocated(api, p, size);
    return p;
}

static int hook_posix_memalign(void **out, size_t align, size_t size)
{
    if (!ready()) {
        void *p = boot_alloc(size, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    if (!real.posix_memalign)
        return ENOMEM;
    int rc = FORWARD(real.posix_memalign(out, align, size));
    if (rc == 0)
        aligned(TF_HOST_API_POSIX_MEMALIGN, *out, size, __builtin_return_address(0));
    return rc;
}

/* memalign for the ones this C library may lack (never on a hot path). */
static void *memalign_any(size_t align, size_t size)
{
    if (real.memalign)
        return real.memalign(align, size);
    void *p = NULL;
    return real.posix_memalign && real.posix_memalign(&p, align, size) == 0 ? p : NULL;
}

static void *hook_aligned_alloc(size_t align, size_t size)
{
    if (!ready())
        return boot_alloc(size, align);
    void *p = FORWARD(real.aligned_alloc ? real.aligned_alloc(align, size) : memalign_any(align, size));
    return aligned(TF_HOST_API_ALIGNED_ALLOC, p, size, __builtin_return_address(0));
}

static void *hook_memalign(size_t align, size_t size)
{
    if (!ready())
        return boot_alloc(size, align);
    return aligned(TF_HOST_API_MEMALIGN, FORWARD(memalign_any(align, size)), size,
                   __builtin_return_address(0));
}

static void *hook_valloc(size_t size)
{
    if (!ready())
        return boot_alloc(size, 4096);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = FORWARD(real.valloc ? real.valloc(size) : memalign_any(page, size));
    return aligned(TF_HOST_API_VALLOC, p, size, __builtin_return_address(0));
}

static void *hook_pvalloc(size_t size)
{
    if (!ready())
        return boot_alloc(size, 4096);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded = (size + page - 1) & ~(page - 1);
    void *p = FORWARD(real.pvalloc ? real.pvalloc(size) : memalign_any(page, rounded ? rounded : page));
    return aligned(TF_HOST_API_PVALLOC, p, rounded ? rounded : page, __builtin_return_address(0));
}

/* The sanitizer build leaves the allocator to the sanitizer: its runtime
 * owns malloc and mmap, and our hooks, instrumented, could run before it has
 * set up its shadow memory (when it is not preloaded first).  The log then
 * says these blocks were not watched (host_*_start). */
#if !defined(TRACE_SANITIZED)
#define EXPORT(name, local) \
    __attribute__((visibility("default"), alias(#local))) __typeof__(local) name;
#else
#define EXPORT(name, local) \
    static __typeof__(local) *const name##_not_exported __attribute__((unused)) = local;
#endif
int host_malloc_is_ours(void)
{
    return atomic_load_explicit(&family_ours, memory_order_relaxed);
}

/* The hooks themselves, under a second name: their addresses are what a
 * slot bound to our malloc (calloc, realloc, free) holds (python_alloc.c
 * compares). */
__attribute__((alias("hook_malloc"))) __typeof__(hook_malloc) host_malloc_call;
__attribute__((alias("hook_calloc"))) __typeof__(hook_calloc) host_calloc_call;
__attribute__((alias("hook_realloc"))) __typeof__(hook_realloc) host_realloc_call;
__attribute__((alias("hook_free"))) __typeof__(hook_free) host_free_call;

EXPORT(malloc, hook_malloc)
EXPORT(free, hook_free)
EXPORT(calloc, hook_calloc)
EXPORT(realloc, hook_realloc)
EXPORT(reallocarray, hook_reallocarray)
EXPORT(posix_memalign, hook_posix_memalign)
EXPORT(aligned_alloc, hook_aligned_alloc)
EXPORT(memalign, hook_memalign)
EXPORT(valloc, hook_valloc)
EXPORT(pvalloc, hook_pvalloc)


/* ----------------------------------------------------------- start-up */

/* Whether the program's malloc and free are ours.  Usually dlsym gives our
 * hooks' addresses, or another definition's (the program's own, or a
 * preload's before us: ASan, a statically linked allocator).  But a program
 * linked without PIE that takes malloc's address (Ubuntu's python3.12 does)
 * holds a canonical PLT entry for it: dlsym gives that stub, which jumps to
 * wherever the program's calls bind, to us when we come first.  So the
 * question is put to the address itself: a call through it that reaches our
 * slow path (both hooks take it before start) is counted.  malloc(16) and
 * free(NULL) are safe whoever answers them, and the probe block goes back to
 * the free of whichever malloc made it. */
static int family_is_ours(void)
{
    void *m = dl_real_dlsym(RTLD_DEFAULT, "malloc");
    void *f = dl_real_dlsym(RTLD_DEFAULT, "free");
    if (m == (void *)hook_malloc && f == (void *)hook_free)
        return 1;
    if (!m || !f || atomic_load_explicit(&fast_below, memory_order_relaxed) ||
        atomic_load_explicit(&fast_free, memory_order_relaxed))
        return 0;
    probe_hits = 0;
    probing = 1;
    void *block = ((void *(*)(size_t))m)(16);
    probing = 0;
    int malloc_ours = probe_hits == 1;
    if (block)
        ((void (*)(void *))(malloc_ours ? (void *)hook_free : f))(block);
    probe_hits = 0;
    probing = 1;
    ((void (*)(void *))f)(NULL);
    probing = 0;
    return malloc_ours && probe_hits == 1;
}

void host_malloc_start(void)
{
    if (!ready())
        return;
    if (!family_is_ours()) {
        atomic_store_explicit(&family_not_ours, 1, memory_order_relaxed);
        host_gap("large blocks from malloc, calloc, realloc and the aligned family",
                 "another definition of malloc comes before libtrace.so (the program itself, "
                 "or a library preloaded before it, such as a sanitizer runtime): only blocks "
                 "from Python's allocators and anonymous mmap are seen");
        return;
    }
    atomic_store_explicit(&family_ours, 1, memory_order_relaxed);
    if (host_threshold == UINT64_MAX)
        return;
    if (glibc_heap) {
        atomic_store_explicit(&fast_free, 1, memory_order_release);
        atomic_store_explicit(&fast_below, (size_t)host_threshold, memory_order_release);
    }
}
