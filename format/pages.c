/*
 * pages.c - see pages.h.
 */
#include <sys/mman.h>

#include "pages.h"

void *tf_pages_resize(void *old, size_t old_size, size_t new_size)
{
    void *p = old ? mremap(old, old_size, new_size, MREMAP_MAYMOVE)
                  : mmap(NULL, new_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void tf_pages_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

void tf_pages_prefault(void *p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = 4096, a = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + size) & ~(page - 1);
    if (e > a)
        madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)size;
#endif
}

int tf_pages_reserve(uint8_t **data, size_t *cap, size_t used, size_t need, size_t first_cap)
{
    if (*cap - used >= need)
        return 0;
    size_t grown = *cap ? *cap : first_cap;
    while (grown - used < need)
        grown *= 2;
    uint8_t *p = tf_pages_resize(*data, *cap, grown);
    if (!p)
        return -1;
    *data = p;
    *cap = grown;
    return 0;
}
