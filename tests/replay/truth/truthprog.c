/*
 * truthprog.c - allocates large blocks (TRACE_HOST_BUFFERS=1) from three
 * libraries: A, then, once A is unloaded, B (most likely at A's addresses),
 * then N (no build-id).  Prints where each library was loaded.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
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
