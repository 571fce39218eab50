/*
 * truthprog.c - allocates large blocks (TRACE_HOST_BUFFERS=1) from three
 * libraries: A, then, once A is unloaded, B (most likely at A's addresses),
 * then N (no build-id).  Prints where each library was loaded.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef void *(*alloc_fn)(size_t);

static void *use(const char *path, const char *sym, size_t n, int unload, const char *tag)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        exit(2);
    }
    alloc_fn f = (alloc_fn)dlsym(h, sym);
    Dl_info info;
    if (!f || !dladdr((void *)f, &info)) {
        fprintf(stderr, "%s: no %s\n", path, sym);
        exit(2);
    }
    free(f(n));
    if (unload) {   /* library A: its function with inlined code too */
        alloc_fn g = (alloc_fn)dlsym(h, "truth_alloc_a_inl");
        if (g)
            free(g(n + 3));
    }
    printf("%s %p\n", tag, info.dli_fbase);
    fflush(stdout);
    if (unload)
        dlclose(h);
    return info.dli_fbase;
}

/* Called from code made at run time (below). */
__attribute__((noinline)) void *truth_from_jit(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

/* A JIT's code: machine code in an anonymous executable mapping, no unwind
 * information, that calls truth_from_jit(n) (x86-64 only).  0 when this
 * machine cannot make it. */
static int jit_call(size_t n)
{
#if defined(__x86_64__)
    unsigned char code[] = {
        0x48, 0x83, 0xec, 0x08,                         /* sub $8, %rsp */
        0x48, 0xbf, 0, 0, 0, 0, 0, 0, 0, 0,             /* movabs $n, %rdi */
        0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,             /* movabs $fn, %rax */
        0xff, 0xd0,                                     /* call *%rax */
        0x48, 0x89, 0xc7,                               /* mov %rax, %rdi */
        0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,             /* movabs $free, %rax */
        0xff, 0xd0,                                     /* call *%rax */
        0x48, 0x83, 0xc4, 0x08,                         /* add $8, %rsp */
        0xc3,                                           /* ret */
    };
    uint64_t fn = (uint64_t)(uintptr_t)truth_from_jit, fr = (uint64_t)(uintptr_t)free, len = n;
    memcpy(code + 6, &len, 8);
    memcpy(code + 16, &fn, 8);
    memcpy(code + 31, &fr, 8);
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 0;
    memcpy(m, code, sizeof code);
    if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0)
        return 0;
    ((void (*)(void))m)();
    munmap(m, 4096);
    return 1;
#else
    (void)n;
    return 0;
#endif
}

int main(int argc, char **argv)
{
    /* A host buffer allocated from JIT code's callee (test_true_stacks.py:
     * the walk ends there, and the report says so). */
    if (argc == 2 && !strcmp(argv[1], "--jit"))
        return jit_call((2u << 20) + 20) ? 0 : 77;
    /* Two copies of library A loaded one after the other, each unloaded,
     * called from the same place: at the same base, the very same return
     * addresses (the reload part of test_true_stacks.py). */
    if (argc == 4 && !strcmp(argv[1], "--reload")) {
        volatile int copies = 2;
        for (int i = 0; i < copies; i++) {   /* one call site: not unrolled */
            char tag[16];
            snprintf(tag, sizeof tag, "r%d", i + 1);
            use(argv[2 + i], "truth_alloc_a", (2u << 20) + 10 + (size_t)i, 1, tag);
        }
        return 0;
    }
    if (argc != 4)
        return 2;
    use(argv[1], "truth_alloc_a", (2u << 20) + 1, 1, "a");
    use(argv[2], "truth_alloc_b", (2u << 20) + 2, 0, "b");
    use(argv[3], "truth_alloc_n", (2u << 20) + 3, 0, "n");
    return 0;
}
