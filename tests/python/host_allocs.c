/*
 * host_allocs - every allocator entry point the tracer hooks, once each, with
 * blocks above and below the threshold.  Prints one line per expectation:
 *   alloc API PTR SIZE      a host_alloc of this block must be in the log
 *   free API PTR            a host_free of this block (after its alloc)
 *   none PTR                no event may name this pointer
 * The test (test_host_allocators.py) runs it with TRACE_HOST_THRESHOLD=1048576.
 * pvalloc is glibc's alone: an allocator preloaded in front of glibc's that
 * lacks it (jemalloc) leaves it to glibc, whose block that allocator's free
 * cannot take.  The test passes "no-pvalloc" for those.  With "noreserve" it
 * also maps a large region with MAP_NORESERVE, as an allocator inside a
 * library maps its own heap (no event; a not_watched record instead).
 * With "cut" it only maps 64 MiB in one function, cuts 8 MiB out of it in
 * another and makes 16 MiB of it PROT_NONE (MAP_FIXED) in a third, and
 * exits with the rest mapped: the report must charge what is left to the
 * first (test_host_allocators.py check_cut_report).
 */

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef TAKE_ADDRESSES
/* host_allocs_nopie: built without PIE, a program that holds malloc's and
 * free's addresses gets canonical PLT entries for them, and dlsym(RTLD_DEFAULT,
 * "malloc") gives the program's stub, not the definition it jumps to (as in
 * Ubuntu's /usr/bin/python3.12).  Its calls still reach libtrace.so's.  The
 * same for mmap and munmap. */
void *(*volatile malloc_address)(size_t);
void (*volatile free_address)(void *);
void *(*volatile mmap_address)(void *, size_t, int, int, int, off_t);
int (*volatile munmap_address)(void *, size_t);
#endif

#define BIG (2u << 20)
#define SMALL 4096u

static void *keep(void *p)
{
    /* The compiler may not drop a malloc/free pair it can see through. */
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

static void say(const char *what, const char *api, void *p, size_t size)
{
    if (!strcmp(what, "none"))
        printf("none %llu\n", (unsigned long long)(uintptr_t)p);
    else if (!strcmp(what, "free"))
        printf("free %s %llu\n", api, (unsigned long long)(uintptr_t)p);
    else
        printf("alloc %s %llu %zu\n", api, (unsigned long long)(uintptr_t)p, size);
}

__attribute__((noinline)) static char *cut_map_whole(void)
{
    return keep(mmap(NULL, 64u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
}

__attribute__((noinline)) static void cut_unmap_part(char *p)
{
    munmap(p + (8u << 20), 8u << 20);
    keep(p);
}

__attribute__((noinline)) static void cut_uncommit_part(char *p)
{
    keep(mmap(p + (32u << 20), 16u << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0));
}

int main(int argc, char **argv)
{
    void *p, *q;
    if (argc > 1 && strcmp(argv[1], "cut") == 0) {
        char *whole = cut_map_whole();
        if (whole == MAP_FAILED)
            return 1;
        cut_unmap_part(whole);
        cut_uncommit_part(whole);
        return 0;
    }
    int pvalloc_ok = !(argc > 1 && strcmp(argv[1], "no-pvalloc") == 0);
    int noreserve = argc > 1 && strcmp(argv[1], "noreserve") == 0;
#ifdef TAKE_ADDRESSES
    /* Taken in code, not in an initialiser: the absolute address in an
     * instruction is what makes the linker give the program the symbol. */
    malloc_address = malloc;
    free_address = free;
    mmap_address = mmap;
    munmap_address = munmap;
#endif

    p = keep(malloc(BIG));
    say("alloc", "malloc", p, BIG);
    memset(p, 1, BIG);
    say("free", "free", p, 0);
    free(p);

    p = keep(malloc(SMALL));
    say("none", "", p, 0);
    free(p);

    p = keep(calloc(BIG / 16, 16));
    say("alloc", "calloc", p, BIG);
    say("free", "free", p, 0);
    free(p);

    /* realloc: small to large, large to larger, large to small. */
    p = keep(malloc(SMALL));
    say("none", "", p, 0);
    q = keep(realloc(p, BIG));
    say("alloc", "realloc", q, BIG);
    p = q;
    say("free", "realloc", p, 0);
    q = keep(realloc(p, 2 * BIG));
    say("alloc", "realloc", q, 2 * BIG);
    p = q;
    say("free", "realloc", p, 0);
    q = keep(realloc(p, SMALL));
    free(q);

    p = keep(reallocarray(NULL, BIG / 8, 8));
    say("alloc", "reallocarray", p, BIG);
    say("free", "free", p, 0);
    free(p);

    if (posix_memalign(&p, 4096, BIG) == 0) {
        say("alloc", "posix_memalign", p, BIG);
        say("free", "free", p, 0);
        free(p);
    }
    p = keep(aligned_alloc(64, BIG));
    say("alloc", "aligned_alloc", p, BIG);
    say("free", "free", p, 0);
    free(p);
    p = keep(memalign(256, BIG));
    say("alloc", "memalign", p, BIG);
    say("free", "free", p, 0);
    free(p);
    p = keep(valloc(BIG));
    say("alloc", "valloc", p, BIG);
    say("free", "free", p, 0);
    free(p);
    if (pvalloc_ok) {
        p = keep(pvalloc(BIG));
        say("alloc", "pvalloc", p, BIG);
        say("free", "free", p, 0);
        free(p);
    }

    /* Anonymous mappings: whole, cut in the middle, moved. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("alloc", "mmap", p, BIG);
    say("free", "munmap", p, 0);
    munmap(p, BIG);

    p = mmap(NULL, 4 * BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("alloc", "mmap", p, 4 * BIG);
    say("free", "munmap", p, 0);
    munmap((char *)p + BIG, page);          /* leaves [p, p+BIG) and the rest */
    say("alloc", "map_rest", p, BIG);       /* what is left: not new blocks */
    q = (char *)p + BIG + page;
    say("alloc", "map_rest", q, 3 * BIG - page);
    munmap(p, BIG);
    say("free", "munmap", p, 0);
    munmap(q, 3 * BIG - page);
    say("free", "munmap", q, 0);

    p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("alloc", "mmap", p, BIG);
    say("free", "mremap", p, 0);
    q = mremap(p, BIG, 4 * BIG, MREMAP_MAYMOVE);
    say("alloc", "mremap", q, 4 * BIG);
    say("free", "munmap", q, 0);
    munmap(q, 4 * BIG);

    /* A move onto the middle of another buffer (MREMAP_FIXED): the kernel
     * unmaps what it covers first, so that buffer is two now (it stayed
     * whole, and its munmaps made a block at the moved one's address,
     * freed twice: a false double_free). */
    p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("alloc", "mmap", p, BIG);
    q = mmap(NULL, 4 * BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("alloc", "mmap", q, 4 * BIG);
    say("free", "mremap", p, 0);
    say("free", "mremap", q, 0);
    say("alloc", "map_rest", q, BIG);
    say("alloc", "map_rest", (char *)q + 2 * BIG, 2 * BIG);
    void *r = mremap(p, BIG, BIG, MREMAP_MAYMOVE | MREMAP_FIXED, (char *)q + BIG);
    say("alloc", "mremap", r, BIG);
    say("free", "munmap", q, 0);
    munmap(q, BIG);
    say("free", "munmap", (char *)q + 2 * BIG, 0);
    munmap((char *)q + 2 * BIG, 2 * BIG);
    say("free", "munmap", r, 0);
    munmap(r, BIG);

    /* One munmap over twenty buffers side by side leaves half of the first
     * and half of the last (the last one's half was lost: only 16 of the
     * buffers an unmap covers were kept for their remainders). */
    char *row = mmap(NULL, 20 * BIG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("none", "", row, 0);
    for (int i = 0; i < 20; i++) {
        p = mmap(row + i * BIG, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        say("alloc", "mmap", p, BIG);
    }
    for (int i = 0; i < 20; i++)
        say("free", "munmap", row + i * BIG, 0);
    say("alloc", "map_rest", row, BIG / 2);
    say("alloc", "map_rest", row + 19 * BIG + BIG / 2, BIG / 2);
    munmap(row + BIG / 2, 19 * BIG);
    say("free", "munmap", row, 0);
    munmap(row, BIG / 2);
    say("free", "munmap", row + 19 * BIG + BIG / 2, 0);
    munmap(row + 19 * BIG + BIG / 2, BIG / 2);

    /* An allocator's own heap, as jemalloc and mimalloc map theirs: not a
     * buffer, and what is carved from it is not seen either. */
    if (noreserve) {
        p = mmap(NULL, 16 * BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        say("none", "", p, 0);
        memset(p, 1, BIG);
        munmap(p, 16 * BIG);
    }

    /* Not buffers: a reservation, a small mapping, a file mapping. */
    p = mmap(NULL, 16 * BIG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("none", "", p, 0);
    munmap(p, 16 * BIG);
    p = mmap(NULL, SMALL, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("none", "", p, 0);
    munmap(p, SMALL);
    FILE *f = tmpfile();
    if (f && ftruncate(fileno(f), BIG) == 0) {
        p = mmap(NULL, BIG, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        say("none", "", p, 0);
        munmap(p, BIG);
    }
    if (f)
        fclose(f);
    return 0;
}
