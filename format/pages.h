/*
 * pages.h - memory for the writer's growing buffers, straight from the kernel.
 *
 * The writer runs inside the traced process, at times from a signal handler
 * that interrupted the app inside malloc.  Its buffers therefore take memory
 * with mmap and mremap (async-signal-safe), never from the allocator, whose
 * lock the interrupted code may hold.  Sizes are whatever the caller asked
 * for; the kernel rounds them to pages.
 */
#ifndef TF_PAGES_H
#define TF_PAGES_H

#include <stddef.h>
#include <stdint.h>

/* Grows (or first maps, when old is NULL) a zero-filled region, keeping its
 * contents; NULL when out of memory, with old still valid. */
void *tf_pages_resize(void *old, size_t old_size, size_t new_size);
void tf_pages_free(void *p, size_t size);
/* Faults in the whole pages of a region about to be written all over (a
 * hash table filled at once), in one system call: each page is otherwise
 * read before it is written, two faults where a fresh page takes one, 1.8
 * us a page on a 2-core VM against 0.3 us this way.  Contents are kept;
 * where the kernel lacks the advice (before 5.14) nothing is done. */
void tf_pages_prefault(void *p, size_t size);
/* Makes room for need more bytes after the used ones of a byte buffer
 * *data of capacity *cap, doubling from first_cap; 0, or -1 when out of
 * memory (the buffer is then unchanged). */
int tf_pages_reserve(uint8_t **data, size_t *cap, size_t used, size_t need, size_t first_cap);

#endif
