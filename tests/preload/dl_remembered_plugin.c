/* The plugin of dl_remembered.c: it opens a library by a bare name itself
 * (not as a tail call: glibc would then take the program for the caller). */
#include <dlfcn.h>

static void *volatile opened;

void *plugin_reopen(const char *name)
{
    opened = dlopen(name, RTLD_NOW);
    return opened;
}
