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
