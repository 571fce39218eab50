/*
 * test_pages.c - tf_pages_prefault faults in the whole pages inside the
 * region it is given, in one call, and keeps what they hold; the pages it
 * only partly covers are left alone.  Without it the writer's intern
 * tables and the Python stack caches took two page faults a page (read,
 * then written) at a process's first events.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "pages.h"
#include "tf_test.h"

#define PAGES 16

static int resident(const uint8_t *base, int page)
{
    unsigned char v = 0;
    return mincore((void *)(base + (size_t)page * 4096), 4096, &v) == 0 && (v & 1);
}

int main(void)
{
#ifndef MADV_POPULATE_WRITE
    puts("format.pages: no MADV_POPULATE_WRITE in these headers, skipped");
    return 77;
#else
    uint8_t *probe = tf_pages_resize(NULL, 0, 4096);
    CHECK(probe != NULL);
    if (madvise(probe, 4096, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
        puts("format.pages: the kernel refuses MADV_POPULATE_WRITE (before 5.14), skipped");
        return 77;
    }
    tf_pages_free(probe, 4096);

    uint8_t *p = tf_pages_resize(NULL, 0, PAGES * 4096);
    CHECK(p != NULL);
    p[3 * 4096 + 5] = 42;
    for (int i = 0; i < PAGES; i++)
        CHECK(resident(p, i) == (i == 3));
    /* Less than a page inside one: nothing. */
    tf_pages_prefault(p + 100, 200);
    CHECK(!resident(p, 0));
    /* From inside page 0 to inside the last page: pages 1 to 14 whole. */
    tf_pages_prefault(p + 100, PAGES * 4096 - 200);
    for (int i = 0; i < PAGES; i++)
        CHECK(resident(p, i) == (i >= 1 && i <= PAGES - 2));
    CHECK(p[3 * 4096 + 5] == 42);
    for (int i = 0; i < PAGES * 4096; i++)
        if (i != 3 * 4096 + 5 && p[i] != 0) {
            CHECK(p[i] == 0);
            break;
        }
    tf_pages_free(p, PAGES * 4096);
    return tf_test_done("format.pages");
#endif
}
