/*
 * prog_stacks.c - the same allocation site reached through different
 * callers whose frames sit at the same stack addresses, so the recorder's
 * per-thread stack memo (native_stack.c) must tell them apart by what the
 * stack holds, not by where the site was entered.  Built without frame
 * pointers, so no frame-pointer chain can help (noipa: outer_a and outer_b
 * are the same code, which the compiler would otherwise fold into one).
 *
 *   prog_stacks N    N cudaMalloc+cudaFree pairs; pair i allocates 1000 + i
 *                    bytes through outer_a, outer_b or outer_c (an alloca of
 *                    a size that varies), chosen by a hash of i
 */
#include <alloca.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP() __asm__ volatile("" ::: "memory")

__attribute__((noinline, noipa)) static void site(size_t size)
{
    void *p;
    if (cudaMalloc(&p, size) != cudaSuccess || cudaFree(p) != cudaSuccess)
        abort();
    KEEP();
}

__attribute__((noinline, noipa)) static void outer_a(size_t size)
{
    site(size);
    KEEP();
}

__attribute__((noinline, noipa)) static void outer_b(size_t size)
{
    site(size);
    KEEP();
}

__attribute__((noinline, noipa)) static void outer_c(size_t size, int pad)
{
    char *buf = alloca(16 * (size_t)pad);
    memset(buf, pad, 16 * (size_t)pad);
    site(size);
    KEEP();
    if (buf[0] == 99)
        puts("");
}

/* Two callers of the outer functions, so the frame above them differs too. */
__attribute__((noinline, noipa)) static void via_x(int i)
{
    unsigned h = (unsigned)i * 2654435761u;
    switch ((h >> 16) % 3) {
    case 0: outer_a(1000 + (size_t)i); break;
    case 1: outer_b(1000 + (size_t)i); break;
    default: outer_c(1000 + (size_t)i, 1 + (int)(h >> 24) % 4); break;
    }
    KEEP();
}

__attribute__((noinline, noipa)) static void via_y(int i)
{
    via_x(i);
    KEEP();
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    for (int i = 0; i < n; i++) {
        if ((i / 7) % 2)
            via_y(i);
        else
            via_x(i);
    }
    printf("done %d\n", n);
    return 0;
}
