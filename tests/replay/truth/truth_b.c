/* truth_b.c - loaded after truth_a.c was unloaded, most likely at its
 * addresses; code at other offsets than truth_a.c's. */
#include <stdlib.h>
#include <string.h>

int truth_pad_b[64];

__attribute__((noinline, noclone)) void *truth_alloc_b(size_t n)
{
    truth_pad_b[0]++;
    char *p = malloc(n); /* TRUTH_B_CALL */
    memset(p, 2, 64);
    truth_pad_b[1] += p[3];
    return p;
}
