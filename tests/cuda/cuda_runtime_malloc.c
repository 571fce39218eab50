/*
 * cuda_runtime_malloc.c - a test double of libcudart.so.13 that hands a
 * freed address to the very next request, from any thread, as a caching
 * runtime does: one free list shared by all threads (last in, first out)
 * over blocks of BLOCK bytes carved from malloc'd memory.  glibc's malloc
 * itself keeps freed blocks per thread, which hides cross-thread reuse.
 * It does not load libcuda.so.1.  cudaFree of CRASH_POINTER crashes inside
 * the call.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define CRASH_POINTER ((void *)(uintptr_t)0xdead0000)
#define BLOCK 256
#define ERROR_MEMORY 2

struct block { struct block *next; };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *free_list;

int cudaGetDevice(int *device)
{
    *device = 0;
    return 0;
}

int cudaRuntimeGetVersion(int *v)
{
    *v = 13000;
    return 0;
}

int cudaMalloc(void **p, size_t size)
{
    if (size > BLOCK)
        return ERROR_MEMORY;
    pthread_mutex_lock(&lock);
    struct block *b = free_list;
    if (b)
        free_list = b->next;
    pthread_mutex_unlock(&lock);
    *p = b ? (void *)b : malloc(BLOCK);
    return *p ? 0 : ERROR_MEMORY;
}

int cudaFree(void *p)
{
    if (p == CRASH_POINTER)
        *(volatile int *)p = 0;   /* a real fault inside the call */
    if (!p)
        return 0;
    struct block *b = p;
    pthread_mutex_lock(&lock);
    b->next = free_list;
    free_list = b;
    pthread_mutex_unlock(&lock);
    return 0;
}
