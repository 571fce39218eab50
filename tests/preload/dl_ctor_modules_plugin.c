/* The plugin of dl_ctor_modules.c: its constructor allocates a large block
 * (as OpenBLAS maps its buffers when NumPy imports it), inside the dlopen
 * that loads it. */
#include <stdlib.h>
#include <string.h>

static char *volatile block;

__attribute__((noinline)) static void plugin_ctor_alloc(void)
{
    block = malloc(2 << 20);
    if (block)
        memset(block, 1, 4096);
}

__attribute__((constructor)) static void plugin_init(void)
{
    plugin_ctor_alloc();
}

int plugin_touch(void)
{
    return block ? block[0] : -1;
}
