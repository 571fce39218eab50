/*
 * dl_remembered.c - a bare name the program's RUNPATH found stays known by
 * that name (preload.dl_remembered).
 *
 * The program (RUNPATH: the plugin's folder) opens "libdl_remembered_plugin.so",
 * a plugin without a soname; the plugin, which has no search path of its
 * own, then opens the same bare name.  glibc gives it the loaded plugin: it
 * remembers the name an object was opened by.  Under the preload our
 * dlopen found the plugin through the program's RUNPATH and loaded it by
 * its full path, so glibc knew it by that path alone, and the plugin's own
 * dlopen failed ("cannot open shared object file").  Exit 0 when both
 * opens give the same object.
 */
#include <dlfcn.h>
#include <stdio.h>

#define PLUGIN "libdl_remembered_plugin.so"

int main(void)
{
    void *h = dlopen(PLUGIN, RTLD_NOW);
    if (!h) {
        printf("program's dlopen: %s\n", dlerror());
        return 1;
    }
    void *(*reopen)(const char *) = (void *(*)(const char *))dlsym(h, "plugin_reopen");
    if (!reopen) {
        printf("dlsym: %s\n", dlerror());
        return 1;
    }
    void *again = reopen(PLUGIN);
    if (!again) {
        printf("plugin's dlopen: %s\n", dlerror());
        return 1;
    }
    if (again != h) {
        printf("plugin's dlopen gave another object\n");
        return 1;
    }
    dlclose(again);
    dlclose(h);
    printf("ok\n");
    return 0;
}
