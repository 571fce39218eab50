/*
 * dl_hooks.c - dlopen, dlclose and dlsym, interposed.
 *
 * dlopen/dlclose: the set of loaded objects changed; record it (modules.c).
 * A bare name is first looked up in the caller's RUNPATH (dl_search.c).
 * dlsym on a library handle: ctypes, cuda-python and hand-rolled loaders get
 * CUDA entry points this way, bypassing LD_PRELOAD; hand back our wrapper for
 * the names we trace (cuda_symbols.c).
 *
 * dlsym(RTLD_NEXT) and dlsym(RTLD_DEFAULT) answer relative to the calling
 * object, which glibc finds from the return address.  A C wrapper would make
 * every such lookup look like ours (and break, among others, the sanitizer
 * runtimes, which find the next definition this way), so dlsym's entry is a
 * few instructions of assembly that jump to glibc's dlsym for those two
 * handles with the caller's return address untouched.
 */
#include "dl_hooks.h"
#include "hook_stack.h"
#include "cuda_symbols.h"
#include "dl_search.h"
#include "host_blocks.h"
#include "modules.h"
#include "python.h"
#include "python_api.h"
#include "recorder.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);
typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

/* Read by the assembly below, which LTO cannot see: used, or a link whose
 * partitions fall otherwise finds it renamed away (undefined reference). */
__attribute__((visibility("hidden"), used)) dlsym_fn trace_real_dlsym_ptr;
static dlopen_fn real_dlopen;
static dlclose_fn real_dlclose;
static _Atomic unsigned long loader_changes;
static _Atomic unsigned long loader_unloads;

/* Called by the assembly, with the caller's arguments saved, the first time
 * anyone calls dlsym (possibly before our constructor: other preloaded
 * libraries look up their next definitions early; the sanitizer runtime
 * does it before its shadow memory exists, hence no instrumentation here).
 * dlvsym is not interposed, so RTLD_NEXT here skips to glibc. */
__attribute__((visibility("hidden"), used, no_sanitize("address", "undefined")))
dlsym_fn trace_dlsym_resolve(void)
{
    static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17" };
    for (size_t i = 0; !trace_real_dlsym_ptr && i < sizeof versions / sizeof *versions; i++)
        trace_real_dlsym_ptr = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    return trace_real_dlsym_ptr;
}

void *dl_real_dlsym(void *handle, const char *name)
{
    dlsym_fn real = trace_real_dlsym_ptr ? trace_real_dlsym_ptr : trace_dlsym_resolve();
    return real ? real(handle, name) : NULL;
}

/* After the program's dl call succeeded, which left the thread's dlerror
 * state empty: our own lookups since (is this an embedder's libpython? a
 * CUDA library? the next definition of a CUDA entry point) leave their
 * failures there ("undefined symbol: PySys_AddAuditHook"), which the
 * program's dlerror() would read as the answer to its call.  Where the call
 * failed, its error is the program's and our hooks look nothing up. */
static void forget_own_dl_errors(void)
{
    (void)dlerror();
}

/* dlsym on an explicit handle (the assembly sends the rest to glibc). */
__attribute__((visibility("hidden"), used)) void *trace_dlsym_on_handle(void *handle, const char *name)
{
    void *p = dl_real_dlsym(handle, name);
    if (!p)
        return NULL;
    void *wrapped = cuda_symbol_wrap(name, p);
    forget_own_dl_errors();
    return wrapped;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym,@function\n"
        "dlsym:\n"
        "    cmpq $-1, %rdi\n"                 /* RTLD_NEXT */
        "    je 1f\n"
        "    testq %rdi, %rdi\n"               /* RTLD_DEFAULT */
        "    je 1f\n"
        "    jmp trace_dlsym_on_handle\n"
        "1:  movq trace_real_dlsym_ptr(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jz 2f\n"
        "    jmp *%rax\n"
        "2:  pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"                  /* keep the stack 16-byte aligned */
        "    call trace_dlsym_resolve\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    testq %rax, %rax\n"
        "    jz 3f\n"
        "    jmp *%rax\n"
        "3:  ret\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym,%function\n"
        "dlsym:\n"
        "    cmn x0, #1\n"                     /* RTLD_NEXT */
        "    b.eq 1f\n"
        "    cbz x0, 1f\n"                     /* RTLD_DEFAULT */
        "    b trace_dlsym_on_handle\n"
        "1:  adrp x16, trace_real_dlsym_ptr\n"
        "    ldr x16, [x16, :lo12:trace_real_dlsym_ptr]\n"
        "    cbz x16, 2f\n"
        "    br x16\n"
        "2:  stp x29, x30, [sp, #-32]!\n"
        "    stp x0, x1, [sp, #16]\n"
        "    bl trace_dlsym_resolve\n"
        "    mov x16, x0\n"
        "    ldp x0, x1, [sp, #16]\n"
        "    ldp x29, x30, [sp], #32\n"
        "    cbz x16, 3f\n"
        "    br x16\n"
        "3:  mov x0, #0\n"
        "    ret\n"
        ".size dlsym, .-dlsym\n");
#else
#error "dlsym's entry needs a few lines of assembly for this architecture"
#endif

static void resolve_loader(void)
{
    if (!real_dlopen)
        real_dlopen = (dlopen_fn)dl_real_dlsym(RTLD_NEXT, "dlopen");
    if (!real_dlclose)
        real_dlclose = (dlclose_fn)dl_real_dlsym(RTLD_NEXT, "dlclose");
}

void *dl_real_dlopen(const char *file, int mode)
{
    resolve_loader();
    return real_dlopen ? real_dlopen(file, mode) : NULL;
}

int dl_real_dlclose(void *handle)
{
    resolve_loader();
    return real_dlclose ? real_dlclose(handle) : -1;
}

/* How deep this thread is in dlopen: the constructors of the objects it
 * loads run inside it, before the rescan after it (recorder.c). */
static __thread __attribute__((tls_model("initial-exec"))) int dlopen_depth;

int dl_in_dlopen(void)
{
    return dlopen_depth;
}

static void *dlopen_from(const char *file, int mode, const void *caller)
{
    void *scratch;
    const char *found = dl_search_for_caller(file, caller, &scratch);
    unsigned long long generation = rec_active() ? modules_loader_generation() : 0;
    dlopen_depth++;
    void *handle = dl_real_dlopen(found, mode);
    dlopen_depth--;
    dl_search_done(scratch);
    if (handle && !(mode & RTLD_NOLOAD))
        atomic_fetch_add(&loader_changes, 1);
    /* Only when an object came in, or a loaded one joins the global scope
     * (where our lookups of Python's and CUDA's names may now find it): a
     * dlopen of an object already loaded (ctypes.CDLL(None), the libc that
     * psutil.heap_info opens around mallinfo2) changes nothing we look at,
     * and the work allocates from the program's malloc (the module table's
     * snapshot, some 30 KiB and a path per object; the failed lookups'
     * messages), which mallinfo2 between two such calls saw. */
    int changed = !generation || generation != modules_loader_generation() || (mode & RTLD_GLOBAL);
    if (handle && changed && rec_active()) {
        modules_rescan_if_changed();
        host_on_dlopen();
        python_on_dlopen();
    }
    if (handle && !(mode & RTLD_NOLOAD))
        py_other_libpythons_own_calls();
    if (handle)
        forget_own_dl_errors();
    return handle;
}

struct dlopen_args {
    const char *file;
    int mode;
    const void *caller;
    void *handle;
};

static void dlopen_packed(void *arg)
{
    struct dlopen_args *a = arg;
    a->handle = dlopen_from(a->file, a->mode, a->caller);
}

/* The rescan after the load takes a few KiB (the search's paths took 12
 * before they were mapped, dl_search.h): where the thread
 * has less left than an event needs (hook_stack.h), the whole call runs
 * on a stack of ours, the loaded objects' constructors with it. */
void *dlopen(const char *file, int mode)
{
    const void *caller = __builtin_return_address(0);
    if (__builtin_expect(hook_stack_roomy(), 1))
        return dlopen_from(file, mode, caller);
    struct dlopen_args a = { .file = file, .mode = mode, .caller = caller };
    hook_stack_run(dlopen_packed, &a);
    return a.handle;
}

int dlclose(void *handle)
{
    int python_suspended = python_before_dlclose(handle);
    int rc = dl_real_dlclose(handle);
    if (rc == 0) {
        atomic_fetch_add(&loader_unloads, 1);
        atomic_fetch_add(&loader_changes, 1);
    }
    /* A dlclose that only dropped a reference unloaded nothing: as above. */
    if (rc == 0 && rec_active())
        modules_rescan_if_changed();
    python_after_dlclose(python_suspended, rc);
    if (rc == 0)
        forget_own_dl_errors();
    return rc;
}

unsigned long dl_loader_changes(void)
{
    return atomic_load_explicit(&loader_changes, memory_order_relaxed);
}

unsigned long dl_loader_unloads(void)
{
    return atomic_load_explicit(&loader_unloads, memory_order_relaxed);
}
