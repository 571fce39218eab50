/*
 * host_mmap.c - large anonymous mappings: mmap (and mmap64), munmap, mremap.
 *
 * What counts: a readable or writable anonymous mapping (private or shared) of
 * at least TRACE_HOST_THRESHOLD bytes made by the program or a library, e.g.
 * Python's mmap.mmap(-1, n), a C extension's own buffers.  What does not:
 *  - mappings an allocator makes for itself while serving a malloc we
 *    forwarded (host_guard is set), and the tracer's own;
 *  - pymalloc's arenas (1 MiB from 3.10, 256 KiB before): heaps of small
 *    objects, not buffers.  They come from the arena allocator's mmap call,
 *    which we know by its caller, the function PyObject_GetArenaAllocator
 *    names;
 *  - PROT_NONE reservations, MAP_NORESERVE, stacks (MAP_STACK, MAP_GROWSDOWN)
 *    and file mappings.
 * A large readable or writable MAP_NORESERVE mapping made outside any malloc
 * we forwarded is an allocator's own heap (jemalloc's extents, mimalloc's
 * arenas: pyarrow and other libraries bring theirs) or a sparse buffer: the
 * blocks handed out of it are not seen unless they pass through malloc or
 * Python's allocators, and the log says so (a not_watched record), rather
 * than showing no host memory at all.  So does a large writable shared
 * mapping of a file (shared memory between processes: PyTorch's DataLoader
 * hands its batches over this way): its pages are the file's.
 * glibc's malloc maps its large blocks with internal calls, which never reach
 * this file: those are seen as malloc blocks (host_malloc.c).
 *
 * munmap may cut any page range out of a mapping: the mapping is recorded as
 * released (before the call) and what is left of it, if still large, as new
 * blocks (after).  mremap of a tracked mapping is a release and a new block.
 * The table of tracked mappings is small and scanned under no lock; a munmap
 * costs one load while nothing is tracked.
 */

#include "host_blocks.h"
#include "dl_hooks.h"
#include "dl_lookup.h"
#include "native_stack.h"
#include "python_api.h"
#include "recorder.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAP_SLOTS 1024u
#define CUTS_MAX 16u
#define ARENA_CALL_WINDOW 192   /* bytes from the arena function's entry to its mmap call */

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);

static mmap_fn real_mmap;
#if !defined(__OFF_T_MATCHES_OFF64_T)
static mmap_fn real_mmap64;
#endif
static munmap_fn real_munmap;
static mremap_fn real_mremap;

/* start: 0 free, 1 being filled, else the mapping's first byte. */
typedef struct mapping { _Atomic uintptr_t start; uint64_t len; } mapping;
static mapping maps[MAP_SLOTS];
static _Atomic unsigned map_count;
static _Atomic unsigned map_high;     /* slots in use are below this */

static uintptr_t arena_alloc_fn;      /* pymalloc's arena allocator, once known */

/* --------------------------------------------------------- the real calls */

static void resolve(void)
{
    if (!real_mmap)
        real_mmap = (mmap_fn)dl_real_dlsym(RTLD_NEXT, "mmap");
#if !defined(__OFF_T_MATCHES_OFF64_T)
    if (!real_mmap64)
        real_mmap64 = (mmap_fn)dl_real_dlsym(RTLD_NEXT, "mmap64");
#endif
    if (!real_munmap)
        real_munmap = (munmap_fn)dl_real_dlsym(RTLD_NEXT, "munmap");
    if (!real_mremap)
        real_mremap = (mremap_fn)dl_real_dlsym(RTLD_NEXT, "mremap");
}

static void *call_mmap(mmap_fn f, void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (!f)
        resolve();
    if (!f)
        f = real_mmap;
    if (f)
        return f(addr, len, prot, flags, fd, off);
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static int call_munmap(void *addr, size_t len)
{
    if (!real_munmap)
        resolve();
    return real_munmap ? real_munmap(addr, len) : (int)syscall(SYS_munmap, addr, len);
}

/* -------------------------------------------------------- what is wanted */

static size_t page_round(uint64_t len)
{
    size_t page = 4096;
    return (size_t)((len + page - 1) & ~(uint64_t)(page - 1));
}

/* pymalloc's arena mmap, known by its caller: the arena allocator's function
 * (looked up once Python is there; a process may load it late), in the
 * global scope or in a libpython the program opened with RTLD_LOCAL.  Not
 * found in the second: 1 MiB arenas of 3.10 and later were recorded as
 * large host buffers (an embedder, 7 MiB of "host buffers" where the
 * program made 4).  From the objects' own symbol tables, not dlsym: a
 * non-Python process looked it up at each large mmap, and its miss replaced
 * a failure the program had not read from dlerror() yet (dl_lookup.h). */
static int from_arena_allocator(const void *caller)
{
    if (!arena_alloc_fn) {
        void (*get)(void *);
        *(void **)&get = dl_lookup_any("PyObject_GetArenaAllocator");
        if (!get)
            return 0;
        struct { void *ctx; void *alloc; void *free; } a = { 0 };
        get(&a);
        arena_alloc_fn = (uintptr_t)a.alloc;
    }
    return (uintptr_t)caller - arena_alloc_fn < ARENA_CALL_WINDOW;
}

void host_mmap_forget_arenas(void)
{
    __atomic_store_n(&arena_alloc_fn, 0, __ATOMIC_RELAXED);
}

static int wanted(size_t len, int prot, int flags, const void *caller)
{
    if (len < host_threshold || host_guard || !(flags & MAP_ANONYMOUS) || prot == PROT_NONE ||
        (flags & (MAP_NORESERVE | MAP_STACK | MAP_GROWSDOWN)))
        return 0;
    if (native_stack_is_ours((uintptr_t)caller))
        return 0;
    return !from_arena_allocator(caller);
}

/* --------------------------------------------------------- the table */

static const char noreserve_what[] = "memory in mappings made with MAP_NORESERVE";
static const char noreserve_why[] =
    "an allocator's own heap (jemalloc or mimalloc inside a library: pyarrow's memory pool, polars) or "
    "a sparse buffer; what is handed out of it is recorded only where it passes through malloc or "
    "Python's allocators (pyarrow: ARROW_DEFAULT_MEMORY_POOL=system sends its buffers through malloc)";

/* Told once (host_gap): see the top of this file. */
static void note_noreserve(size_t len, int prot, int flags, const void *caller)
{
    if ((flags & (MAP_NORESERVE | MAP_ANONYMOUS)) == (MAP_NORESERVE | MAP_ANONYMOUS) &&
        !(flags & (MAP_STACK | MAP_GROWSDOWN)) && (prot & (PROT_READ | PROT_WRITE)) &&
        len >= host_threshold && !host_guard && !native_stack_is_ours((uintptr_t)caller))
        host_gap(noreserve_what, noreserve_why);
}

static const char shared_what[] = "memory in writable shared mappings of files";
static const char shared_why[] =
    "shared memory between processes (shm_open, memfd, /dev/shm: PyTorch's DataLoader batches and "
    "shared tensors, multiprocessing.shared_memory) or a file written through a mapping (numpy.memmap, "
    "mmap.mmap of a file); its pages belong to the file, not to a heap, and are not recorded";

/* Told once: a large writable MAP_SHARED mapping of a file descriptor.
 * Read-only and private file mappings (libraries, data read through a
 * mapping) are not buffers of the program's and say nothing. */
static void note_shared_file(size_t len, int prot, int flags, const void *caller)
{
    if (!(flags & MAP_ANONYMOUS) && (flags & MAP_SHARED) && (prot & PROT_WRITE) && len >= host_threshold &&
        !host_guard && !native_stack_is_ours((uintptr_t)caller))
        host_gap(shared_what, shared_why);
}

static const char full_what[] = "some large anonymous mappings";
static const char full_why[] = "too many live at once to track them all: those are not recorded";

static void track(uint32_t api, void *p, uint64_t len)
{
    if (!rec_active())
        return;
    for (unsigned i = 0; i < MAP_SLOTS; i++) {
        uintptr_t empty = 0;
        if (!atomic_compare_exchange_strong(&maps[i].start, &empty, 1))
            continue;
        maps[i].len = len;
        atomic_store(&maps[i].start, (uintptr_t)p);
        unsigned high = atomic_load(&map_high);
        while (high < i + 1 && !atomic_compare_exchange_weak(&map_high, &high, i + 1))
            ;
        atomic_fetch_add(&map_count, 1);
        host_record(TF_EV_HOST_ALLOC, TF_HOST_MMAP, api, p, len);
        return;
    }
    host_gap(full_what, full_why);
}

typedef struct cut { uintptr_t start; uint64_t len; } cut;

static int has_remainder(cut c, uintptr_t lo, uintptr_t hi)
{
    return c.start < lo || c.start + page_round(c.len) > hi;
}

/* Take every tracked mapping overlapping [lo, hi) out of the table and
 * record its release; the mappings taken go to out[], at most CUTS_MAX:
 * past that, one that reaches outside the range takes the place of one
 * that does not (of mappings that do not overlap, two at most reach out:
 * a munmap over twenty lost the remainder of the last), and the others are
 * released with nothing to restore should the call fail. */
static unsigned take_overlapping(uint32_t api, uintptr_t lo, uintptr_t hi, cut *out)
{
    unsigned n = 0, high = atomic_load(&map_high);
    for (unsigned i = 0; i < high; i++) {
        uintptr_t s = atomic_load_explicit(&maps[i].start, memory_order_acquire);
        if (s <= 1)
            continue;
        uint64_t len = maps[i].len;
        if (s >= hi || s + page_round(len) <= lo)
            continue;
        if (!atomic_compare_exchange_strong(&maps[i].start, &s, 0))
            continue;
        atomic_fetch_sub(&map_count, 1);
        host_record(TF_EV_HOST_FREE, TF_HOST_MMAP, api, (void *)s, len);
        cut c = { s, len };
        if (n < CUTS_MAX) {
            out[n++] = c;
        } else if (has_remainder(c, lo, hi)) {
            for (unsigned k = 0; k < n; k++)
                if (!has_remainder(out[k], lo, hi)) {
                    out[k] = c;
                    break;
                }
        }
    }
    return n;
}

/* After a successful unmap of [lo, hi): what is left of each mapping taken,
 * if still large, is a block of its own.  Its api is map_rest, not the
 * call's: the piece was made where its mapping was, and a report that took
 * it for the cutting call's allocation counted its bytes twice, at the
 * wrong site (an munmap of 8 MiB in a 64 MiB mapping: 56 MiB more
 * "allocated" at the munmap; FORMAT.md section 7). */
static void keep_remainders(const cut *taken, unsigned n, uintptr_t lo, uintptr_t hi)
{
    for (unsigned i = 0; i < n; i++) {
        uintptr_t s = taken[i].start, e = s + page_round(taken[i].len);
        if (s < lo && lo - s >= host_threshold)
            track(TF_HOST_API_MAP_REST, (void *)s, lo - s);
        if (e > hi && e - hi >= host_threshold)
            track(TF_HOST_API_MAP_REST, (void *)hi, e - hi);
    }
}

/* A failed call: the mappings are all still there, each the rest of
 * itself. */
static void restore(const cut *taken, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        track(TF_HOST_API_MAP_REST, (void *)taken[i].start, taken[i].len);
}

static int any_tracked(void)
{
    return atomic_load_explicit(&map_count, memory_order_relaxed) != 0;
}

/* --------------------------------------------------------------- entry */

/* host_mmap_start's probe (family_is_ours): calls that reached our hooks on
 * this thread while it is set. */
static __thread __attribute__((tls_model("initial-exec"))) int probing, probe_hits;

static void *mapped(mmap_fn *which, void *addr, size_t len, int prot, int flags, int fd, off_t off,
                    const void *caller)
{
    if (__builtin_expect(probing, 0))
        probe_hits++;
    cut taken[CUTS_MAX];
    unsigned n = 0;
    uintptr_t lo = (uintptr_t)addr, hi = lo + page_round(len);
    int fixed = (flags & MAP_FIXED) && any_tracked() && !host_guard;
    if (fixed)   /* MAP_FIXED replaces whatever was there */
        n = take_overlapping(TF_HOST_API_MMAP, lo, hi, taken);
    void *p = call_mmap(*which, addr, len, prot, flags, fd, off);
    if (fixed) {
        if (p == MAP_FAILED)
            restore(taken, n);
        else
            keep_remainders(taken, n, lo, hi);
    }
    if (p != MAP_FAILED && wanted(len, prot, flags, caller))
        track(TF_HOST_API_MMAP, p, len);
    else if (p != MAP_FAILED && __builtin_expect(flags & MAP_NORESERVE, 0))
        note_noreserve(len, prot, flags, caller);
    else if (p != MAP_FAILED && !(flags & MAP_ANONYMOUS))
        note_shared_file(len, prot, flags, caller);
    return p;
}

static void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mapped(&real_mmap, addr, len, prot, flags, fd, off, __builtin_return_address(0));
}

/* Where off_t is off64_t, glibc's mmap64 is mmap under a second name: one
 * address.  Ours is too, so a tool that compares the two (memray checks its
 * hooked "mmap", which its headers make mmap64, against dlsym's "mmap")
 * finds one function and prints no warning on the program's stderr. */
#if !defined(__OFF_T_MATCHES_OFF64_T)
static void *hook_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mapped(&real_mmap64, addr, len, prot, flags, fd, off, __builtin_return_address(0));
}
#endif

static int hook_munmap(void *addr, size_t len)
{
    if (__builtin_expect(probing, 0))
        probe_hits++;
    if (!any_tracked() || host_guard)
        return call_munmap(addr, len);
    cut taken[CUTS_MAX];
    uintptr_t lo = (uintptr_t)addr, hi = lo + page_round(len);
    unsigned n = take_overlapping(TF_HOST_API_MUNMAP, lo, hi, taken);
    int rc = call_munmap(addr, len);
    if (rc == 0)
        keep_remainders(taken, n, lo, hi);
    else
        restore(taken, n);
    return rc;
}

static void *hook_mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *target = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        target = va_arg(ap, void *);
        va_end(ap);
    }
    if (!real_mremap)
        resolve();
    if (!any_tracked() || host_guard || !real_mremap)
        return real_mremap ? real_mremap(old, old_len, new_len, flags, target)
                           : (void *)syscall(SYS_mremap, old, old_len, new_len, flags, target);
    cut taken[CUTS_MAX], replaced[CUTS_MAX];
    uintptr_t lo = (uintptr_t)old, hi = lo + page_round(old_len);
    unsigned n = take_overlapping(TF_HOST_API_MREMAP, lo, hi, taken);
    /* MREMAP_FIXED unmaps whatever was at the target first, as MAP_FIXED
     * does (the kernel refuses a target overlapping the old range): left
     * in the table, a mapping the move covered stayed whole, and its later
     * munmaps made it a block at the moved one's address, freed twice (a
     * false double_free). */
    uintptr_t tlo = (uintptr_t)target, thi = tlo + page_round(new_len);
    unsigned m = flags & MREMAP_FIXED ? take_overlapping(TF_HOST_API_MREMAP, tlo, thi, replaced) : 0;
    void *p = real_mremap(old, old_len, new_len, flags, target);
    if (p == MAP_FAILED) {
        restore(taken, n);
        restore(replaced, m);
        return p;
    }
    keep_remainders(replaced, m, tlo, thi);
    /* What was around the moved range stays; the range itself is now at p
     * (MREMAP_DONTUNMAP leaves the old pages mapped but empty: they are a
     * reservation now, not the buffer). */
    keep_remainders(taken, n, lo, hi);
    if (n && new_len >= host_threshold)
        track(TF_HOST_API_MREMAP, p, new_len);
    return p;
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
EXPORT(mmap, hook_mmap)
#if defined(__OFF_T_MATCHES_OFF64_T)
EXPORT(mmap64, hook_mmap)
#else
EXPORT(mmap64, hook_mmap64)
#endif
EXPORT(munmap, hook_munmap)
EXPORT(mremap, hook_mremap)


/* Whether the program's mmap and munmap are ours: dlsym's answer, or, when
 * that is a program's PLT stub (linked without PIE, holding mmap's address:
 * host_malloc.c says more), a call through it that our hooks count.  The
 * probe maps one inaccessible page, not a block anyone records, and unmaps
 * it while it is still mapped (never an address another thread may since
 * have been given). */
static int family_is_ours(void)
{
    void *m = dl_real_dlsym(RTLD_DEFAULT, "mmap");
    void *u = dl_real_dlsym(RTLD_DEFAULT, "munmap");
    if (m == (void *)hook_mmap && u == (void *)hook_munmap)
        return 1;
    if (!m || !u)
        return 0;
    probe_hits = 0;
    probing = 1;
    void *page = ((mmap_fn)m)(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    probing = 0;
    int mmap_ours = probe_hits == 1;
    if (page == MAP_FAILED)
        return 0;
    probe_hits = 0;
    probing = 1;
    int rc = ((int (*)(void *, size_t))u)(page, 4096);
    probing = 0;
    return mmap_ours && rc == 0 && probe_hits == 1;
}

void host_mmap_start(void)
{
    resolve();
    if (!family_is_ours())
        host_gap("large anonymous mappings (mmap)",
                 "another definition of mmap comes before libtrace.so (the program itself, or "
                 "a library preloaded before it, such as a sanitizer runtime)");
}

void host_mmap_fork_child(void)
{
    for (unsigned i = 0; i < MAP_SLOTS; i++)
        atomic_store(&maps[i].start, 0);
    atomic_store(&map_count, 0);
    atomic_store(&map_high, 0);
}
