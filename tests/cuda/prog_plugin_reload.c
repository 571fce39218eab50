/*
 * prog_plugin_reload.c - a plugin with its own CUDA runtime (cuda_plugin.c)
 * opened, called, closed, and opened again, three times.  After each close
 * the program maps the place its runtime had away, so the runtime comes
 * back elsewhere while the plugin comes back at its old address: the
 * plugin's call sites have the return addresses they had, and the preload
 * must call the runtime loaded now, not the one that was there (unmapped,
 * then inaccessible: a stale call is a SIGSEGV, not a silent wrong answer).
 *
 * Exit 0; 3 when the loader did not do what the test needs (the runtime
 * stayed loaded, its place could not be taken), and the test says so.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

struct span { uintptr_t lo, hi; };

static int runtime_span(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct span *s = arg;
    if (!strstr(info->dlpi_name, "libcudart"))
        return 0;
    *s = (struct span){.lo = UINTPTR_MAX, .hi = 0};
    for (int k = 0; k < info->dlpi_phnum; k++) {
        if (info->dlpi_phdr[k].p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + info->dlpi_phdr[k].p_vaddr, b = a + info->dlpi_phdr[k].p_memsz;
        s->lo = a < s->lo ? a : s->lo;
        s->hi = b > s->hi ? b : s->hi;
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *first = NULL;
    for (int round = 0; round < 3; round++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            printf("dlopen: %s\n", dlerror());
            return 1;
        }
        int (*plugin_alloc)(void) = (int (*)(void))dlsym(h, "plugin_alloc");
        struct span rt = {0, 0};
        dl_iterate_phdr(runtime_span, &rt);
        if (!plugin_alloc || !rt.hi)
            return 1;
        if (!first)
            first = (void *)plugin_alloc;
        /* The test needs a round with the first round's call sites. */
        printf("round %d same_sites %d\n", round, (void *)plugin_alloc == first);
        fflush(stdout);
        if (plugin_alloc() != 0)
            return 1;
        dlclose(h);
        void *still = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
        if (still) {
            printf("the plugin's runtime stayed loaded\n");
            return 3;
        }
        uintptr_t lo = rt.lo & ~(uintptr_t)4095, hi = (rt.hi + 4095) & ~(uintptr_t)4095;
        void *taken = mmap((void *)lo, hi - lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (taken != (void *)lo) {
            printf("the runtime's old place could not be taken\n");
            return 3;
        }
    }
    return 0;
}
