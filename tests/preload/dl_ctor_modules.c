/*
 * dl_ctor_modules.c - a block allocated by a constructor inside dlopen has
 * its stack resolved in the plugin (preload.dl_ctor_modules).
 *
 * The plugin's constructor mallocs 2 MiB while the program's dlopen loads
 * it.  The recorder wrote the plugin's MODULE_LOAD only after dlopen
 * returned, so the host_alloc came first, and a reader, which resolves an
 * address with the modules loaded at its event (trace-dump --json,
 * trace-replay check's stacks), gave its plugin frames no module.  The test
 * script checks the event's innermost frame names the plugin.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    int (*touch)(void) = (int (*)(void))dlsym(h, "plugin_touch");
    if (!touch || touch() != 1) {
        printf("plugin_touch\n");
        return 1;
    }
    return 0;
}
