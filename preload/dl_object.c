/*
 * dl_object.c - which loaded object holds an address (see dl_object.h).
 */
#include "dl_object.h"

#include "dl_lookup.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>

/* _dl_find_object is looked up, not linked, so that libtrace.so still
 * loads on glibc 2.34; where it is missing, or finds nothing (before the
 * loader has set its table up), dladdr answers as before.  The look-up
 * itself is a symbol search: done once, in the objects' own tables (the
 * first may come at a host block, where dlsym would replace a failure the
 * program has not read from dlerror() yet: dl_lookup.h). */
#ifdef DLFO_STRUCT_HAS_EH_DBASE
typedef int (*find_fn)(void *, struct dl_find_object *);

static find_fn finder(void)
{
    static _Atomic(find_fn) found;
    static _Atomic int looked;
    find_fn f = atomic_load_explicit(&found, memory_order_acquire);
    if (f || atomic_load_explicit(&looked, memory_order_acquire))
        return f;
    *(void **)&f = dl_lookup_any("_dl_find_object");
    atomic_store_explicit(&found, f, memory_order_release);
    atomic_store_explicit(&looked, 1, memory_order_release);
    return f;
}
#endif

uintptr_t dl_object_start(const void *addr)
{
    if (!addr)
        return 0;
#ifdef DLFO_STRUCT_HAS_EH_DBASE
    find_fn find = finder();
    struct dl_find_object fo;
    if (find && find((void *)addr, &fo) == 0 && fo.dlfo_map_start)
        return (uintptr_t)fo.dlfo_map_start;
#endif
    Dl_info info;
    return dladdr(addr, &info) ? (uintptr_t)info.dli_fbase : 0;
}

const char *dl_object_file(const void *addr)
{
    if (!addr)
        return NULL;
#ifdef DLFO_STRUCT_HAS_EH_DBASE
    /* The program's own link map has an empty name: dladdr names it. */
    find_fn find = finder();
    struct dl_find_object fo;
    if (find && find((void *)addr, &fo) == 0 && fo.dlfo_link_map && fo.dlfo_link_map->l_name &&
        fo.dlfo_link_map->l_name[0])
        return fo.dlfo_link_map->l_name;
#endif
    Dl_info info;
    return dladdr(addr, &info) ? info.dli_fname : NULL;
}
