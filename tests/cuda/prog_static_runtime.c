/*
 * prog_static_runtime.c - the shape of a program linked with CUDA's static
 * runtime (nvcc's default): the runtime's entry points and its internal
 * functions, named libcudart_static_<hash>, are the program's own code, and
 * they reach the driver through cuGetProcAddress, beneath which the hooks
 * see the calls.  So the first frames of such an event's native stack are
 * the runtime's; the report's allocation site must be the program's line
 * that called cudaMalloc (user_site here), not the runtime's inside.
 * A stand-in of that shape over the driver double.  Prints "api result ptr".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef unsigned long long dptr;
typedef int (*gpa_fn)(const char *, void **, int, uint64_t, int *);
typedef int (*alloc_fn)(dptr *, size_t);
typedef int (*free_fn)(dptr);

static alloc_fn driver_alloc;
static free_fn driver_free;

/* Calls that keep their frames (no tail calls): the real runtime's do. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

__attribute__((noinline)) int libcudart_static_3f1a9c0e5b7d2468ac13579bdf02468ace13579b(dptr *p, size_t n)
{
    int r = driver_alloc(p, n);
    KEEP_FRAME();
    return r;
}

__attribute__((noinline)) int libcudart_static_0b2d4f6a8c1e3a5c7e9b0d2f4a6c8e1b3d5f7a9c(dptr p)
{
    int r = driver_free(p);
    KEEP_FRAME();
    return r;
}

/* The runtime's entry points, as the static library defines them. */
__attribute__((noinline)) int cudaMalloc(void **p, size_t n)
{
    dptr d = 0;
    int r = libcudart_static_3f1a9c0e5b7d2468ac13579bdf02468ace13579b(&d, n);
    *p = (void *)(uintptr_t)d;
    KEEP_FRAME();
    return r;
}

__attribute__((noinline)) int cudaFree(void *p)
{
    int r = libcudart_static_0b2d4f6a8c1e3a5c7e9b0d2f4a6c8e1b3d5f7a9c((dptr)(uintptr_t)p);
    KEEP_FRAME();
    return r;
}

__attribute__((noinline)) static void user_site(void)
{
    for (int i = 0; i < 3; i++) {
        void *p = NULL;
        int r = cudaMalloc(&p, (size_t)(i + 1) << 20);
        printf("cuMemAlloc_v2 %d %llu\n", r, (unsigned long long)(uintptr_t)p);
        r = cudaFree(p);
        printf("cuMemFree_v2 %d %llu\n", r, (unsigned long long)(uintptr_t)p);
    }
    KEEP_FRAME();
}

int main(void)
{
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!libcuda) {
        printf("no libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    gpa_fn gpa = (gpa_fn)dlsym(libcuda, "cuGetProcAddress_v2");
    int status = -1;
    if (!gpa || gpa("cuMemAlloc", (void **)&driver_alloc, 12080, 0, &status) || status ||
        gpa("cuMemFree", (void **)&driver_free, 12080, 0, &status) || status) {
        printf("missing cuMemAlloc or cuMemFree\n");
        return 1;
    }
    user_site();
    return 0;
}
