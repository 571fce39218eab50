/*
 * prog_secure.c - linked against libtrace.so itself (LD_PRELOAD does not
 * reach a setuid program), so the tracer starts inside a secure-execution
 * process and must refuse.
 */
#include <stdio.h>
#include <sys/auxv.h>

#include "trace_api.h"

int main(void)
{
    int pool = trace_pool_register("secure");
    trace_pool_alloc(pool, (void *)0x1000, 10, 16, 0);
    printf("secure=%lu\n", getauxval(AT_SECURE));
    return 0;
}
