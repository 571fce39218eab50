/*
 * dl_search.c - the calling object's DT_RPATH/DT_RUNPATH, applied by hand.
 *
 * glibc's order for a bare name: already loaded (by soname), the caller's
 * DT_RPATH when it has no DT_RUNPATH, LD_LIBRARY_PATH, the caller's
 * DT_RUNPATH, then the cache and the default directories.  We handle the
 * caller's own entries (with $ORIGIN) and leave everything else to glibc;
 * RPATH inherited from the loading chain is not followed.
 *
 * glibc also remembers the name an object was asked for: a later dlopen of
 * that bare name, from any object, gets the loaded one, whatever the
 * caller's own search path (the soname matches too, but a plugin may have
 * none, and "libfoo.so" is often not its soname).  The object we loaded by
 * its full path is known to glibc under that path only, so the names we
 * translated are remembered here and a later bare dlopen of one gets the
 * same object while it is loaded.  (A DT_NEEDED of that name in a library
 * loaded later still searches as usual.)
 */
#include "dl_search.h"
#include "dl_hooks.h"
#include "dl_lookup.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct search_path {
    const char *list;     /* colon-separated, or NULL */
    int is_runpath;
};

static struct search_path caller_search_path(const struct link_map *map)
{
    const char *strtab = NULL;
    ElfW(Xword) rpath = 0, runpath = 0;
    int has_rpath = 0, has_runpath = 0;
    for (const ElfW(Dyn) *d = map->l_ld; d && d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)d->d_un.d_ptr;
        else if (d->d_tag == DT_RPATH)
            rpath = d->d_un.d_val, has_rpath = 1;
        else if (d->d_tag == DT_RUNPATH)
            runpath = d->d_un.d_val, has_runpath = 1;
    }
    /* glibc relocates DT_STRTAB in place on most targets; where it does
     * not, the value is still an offset from the load address. */
    if (strtab && (uintptr_t)strtab < map->l_addr)
        strtab += map->l_addr;
    if (!strtab || (!has_rpath && !has_runpath))
        return (struct search_path){ NULL, 0 };
    if (has_runpath)
        return (struct search_path){ strtab + runpath, 1 };
    return (struct search_path){ strtab + rpath, 0 };
}

/* dir (one entry, len bytes, $ORIGIN expanded) + "/" + file into buf. */
static int join(char *buf, size_t cap, const char *dir, size_t len, const char *origin,
                const char *file)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n < cap; ) {
        const char *var = !strncmp(dir + i, "$ORIGIN", 7)     ? "$ORIGIN"
                          : !strncmp(dir + i, "${ORIGIN}", 9) ? "${ORIGIN}"
                                                              : NULL;
        if (var) {
            n += (size_t)snprintf(buf + n, cap - n, "%s", origin);
            i += strlen(var);
        } else if (dir[i] == '$') {
            return 0;   /* $LIB, $PLATFORM: leave it to glibc */
        } else {
            buf[n++] = dir[i++];
        }
    }
    if (n >= cap)
        return 0;
    return snprintf(buf + n, cap - n, "/%s", file) < (int)(cap - n);
}

static const char *find_in(const char *list, const char *origin, const char *file, char *buf,
                           size_t cap)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ":");
        if (len && join(buf, cap, p, len, origin, file) && access(buf, F_OK) == 0)
            return buf;
        p += len + (p[len] == ':');
    }
    return NULL;
}

#define PATH_CAP 4096
/* The search's memory: the path found, the caller's directory, the
 * executable's name. */
struct scratch {
    char found[PATH_CAP], origin[PATH_CAP], exe[PATH_CAP];
};

static void origin_of(const struct link_map *map, char *origin, size_t cap, char *exe)
{
    const char *path = map->l_name;
    if (!path || !path[0]) {
        ssize_t n = readlink("/proc/self/exe", exe, PATH_CAP - 1);
        exe[n > 0 ? n : 0] = '\0';
        path = exe;
    }
    const char *slash = strrchr(path, '/');
    size_t len = slash ? (size_t)(slash - path) : 0;
    snprintf(origin, cap, "%.*s", (int)len, path);
}

/* Bare names translated to a full path (remember), newest last: a few
 * dozen at most in a process, kept for its life. */
#define REMEMBERED_MAX 128
struct remembered {
    char *name, *path;
};
static struct remembered *_Atomic remembered[REMEMBERED_MAX];

static void remember(const char *name, const char *path)
{
    for (int i = 0; i < REMEMBERED_MAX; i++) {
        struct remembered *r = atomic_load(&remembered[i]);
        if (!r)
            break;
        if (!strcmp(r->name, name) && !strcmp(r->path, path))
            return;             /* loaded again after a dlclose */
    }
    struct remembered *r = malloc(sizeof *r);
    if (!r)
        return;
    r->name = strdup(name);
    r->path = strdup(path);
    if (r->name && r->path)
        for (int i = 0; i < REMEMBERED_MAX; i++) {
            struct remembered *empty = NULL;
            if (atomic_compare_exchange_strong(&remembered[i], &empty, r))
                return;
        }
    free(r->name);
    free(r->path);
    free(r);
}

/* Whether glibc has an object loaded under `file` (dlopen(RTLD_NOLOAD)).
 * The loader is asked only when a loaded object has that path, soname or
 * file name (dl_lookup_loaded, which answers yes wherever glibc's own
 * match of names does, and more often): a dlopen of an object not loaded,
 * the usual case here, had our miss make an error message through the
 * program's malloc (dl_lookup.h). */
static int loaded_as(const char *file)
{
    if (!dl_lookup_loaded(file))
        return 0;
    void *loaded = dl_real_dlopen(file, RTLD_LAZY | RTLD_NOLOAD);
    if (loaded)
        dl_real_dlclose(loaded);
    return loaded != NULL;
}

/* The path `name` was loaded from by an earlier translation, when that
 * object is still loaded, copied into buf; else NULL. */
static const char *recall(const char *name, char *buf, size_t cap)
{
    for (int i = REMEMBERED_MAX - 1; i >= 0; i--) {
        struct remembered *r = atomic_load(&remembered[i]);
        if (!r || strcmp(r->name, name) != 0)
            continue;
        if (!loaded_as(r->path))
            continue;
        if ((size_t)snprintf(buf, cap, "%s", r->path) < cap)
            return buf;
    }
    return NULL;
}

const char *dl_search_for_caller(const char *file, const void *caller, void **scratch)
{
    *scratch = NULL;
    if (!file || strchr(file, '/'))
        return file;
    if (loaded_as(file))
        return file;
    struct scratch *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return file;   /* glibc's own search, for our dlopen */
    *scratch = s;
    char *buf = s->found;
    size_t cap = sizeof s->found;
    const char *again = recall(file, buf, cap);
    if (again)
        return again;
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(caller, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return file;
    struct search_path sp = caller_search_path(map);
    if (!sp.list)
        return file;
    char *origin = s->origin;
    origin_of(map, origin, sizeof s->origin, s->exe);
    /* LD_LIBRARY_PATH comes before DT_RUNPATH: if it has the file, glibc
     * finds it there with the bare name. */
    if (sp.is_runpath && find_in(getenv("LD_LIBRARY_PATH"), origin, file, buf, cap))
        return file;
    const char *found = find_in(sp.list, origin, file, buf, cap);
    if (!found)
        return file;
    remember(file, found);
    return found;
}

void dl_search_done(void *scratch)
{
    if (scratch)
        munmap(scratch, sizeof(struct scratch));
}
