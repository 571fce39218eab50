/*
 * one_block.c - a process that records one large block (under
 * TRACE_HOST_BUFFERS=1) and exits: the shortest process that writes a log.
 */
#include <stdlib.h>
#include <string.h>

int main(void)
{
    /* volatile: the compiler may drop a malloc whose block nobody reads. */
    char *volatile p = malloc(2u << 20);
    if (!p)
        return 1;
    memset(p, 1, 4096);
    free(p);
    return 0;
}
