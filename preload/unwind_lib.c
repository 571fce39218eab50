/*
 * unwind_lib.c - the libunwind we were built against, opened by its path.
 *
 * libtrace.so used to name libunwind.so.8 in its DT_NEEDED: the loader then
 * looked the name up like any other, LD_LIBRARY_PATH first, or took an
 * object of that soname the program had loaded already.  A program whose
 * environment puts another library under that name first (LLVM's libunwind
 * in a toolchain or conda environment) did not start at all: "symbol lookup
 * error: libtrace.so: undefined symbol: unw_backtrace".  Linking Debian's
 * libunwind.a into libtrace.so is not possible: the archive is not
 * position-independent (R_X86_64_32S relocations in Lregs.o, Linit.o).  A
 * DT_RPATH on libtrace.so is not either: our dlopen runs the program's own
 * dlopen calls, and glibc would search our RPATH for every bare name the
 * program opens, before its LD_LIBRARY_PATH (dl_search.c).
 *
 * So the library is opened here, by path, RTLD_LOCAL: its symbols do not
 * join the program's, and a library of the same soname the program loads
 * from elsewhere (by path, DT_NEEDED, ctypes) is its own, since glibc
 * matches a path by file.  The copy opened first is the build's own,
 * libgputrace-unwind.so.8 beside libtrace.so: the system's file under a
 * soname of its own, so that a program opening "libunwind.so.8" by that
 * name later (or a library needing it) gets what its LD_LIBRARY_PATH says,
 * not ours: glibc hands a loaded object to anyone who asks for its soname.
 * Else the system's, by the path the build found it at, else that name
 * beside libtrace.so.  Before all of them, a libunwind 1.x the program
 * loaded already is used, as before (try_resident says why).  RTLD_NOW:
 * each of its imports is bound here, at start, so a dependency that lacks
 * one (a foreign liblzma.so.5) is an error now, not a crash in the middle
 * of a walk, and no lazy binding runs in a signal handler.  A copy missing
 * any function we call is closed again and the next one tried; with none,
 * native stacks are left out (an INFO record says why) and the program
 * runs as it would without us.
 */
#include "unwind_lib.h"
#include "dl_hooks.h"
#include "dl_lookup.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#ifndef TRACE_LIBUNWIND_PATH
#define TRACE_LIBUNWIND_PATH "/usr/lib/x86_64-linux-gnu/libunwind.so.8"
#endif

struct unwind_lib unwind_lib;
static void *handle;
static char problem[PATH_MAX + 256];

#define NAME_(x) #x
#define NAME(x) NAME_(x)   /* the name a macro of the header stands for */

/* Every pointer from `h`, or 0 (and `problem` says which was missing). */
static int bind_all(void *h, const char *path)
{
    struct unwind_lib l;
    static const char *const names[] = {
        NAME(unw_backtrace), NAME(unw_init_local), NAME(unw_get_reg), NAME(unw_step),
        NAME(unw_set_caching_policy), NAME(unw_local_addr_space),
#if defined(__x86_64__)
        NAME(unw_tdep_getcontext),
#endif
    };
    void *found[sizeof names / sizeof *names];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        found[i] = dl_real_dlsym(h, names[i]);
        if (!found[i]) {
            snprintf(problem, sizeof problem, "%s has no %s", path, names[i]);
            return 0;
        }
    }
    l.backtrace = (__typeof__(l.backtrace))found[0];
    l.init_local = (__typeof__(l.init_local))found[1];
    l.get_reg = (__typeof__(l.get_reg))found[2];
    l.step = (__typeof__(l.step))found[3];
    l.set_caching_policy = (__typeof__(l.set_caching_policy))found[4];
    l.local_addr_space = (unw_addr_space_t *)found[5];
#if defined(__x86_64__)
    l.getcontext = (__typeof__(l.getcontext))found[6];
#endif
    unwind_lib = l;
    return 1;
}

static int try_path(const char *path)
{
    void *h = dl_real_dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        snprintf(problem, sizeof problem, "%s", err ? err : path);
        return 0;
    }
    if (!bind_all(h, path)) {
        dl_real_dlclose(h);
        return 0;
    }
    handle = h;
    return 1;
}

/* A libunwind of this soname the program loaded before us, with every
 * function we call (a libunwind 1.x, not LLVM's under the same name): that
 * one, as the loader gave it to us before.  A second copy would be bound
 * to the first one's internals: its calls between its own functions go
 * through the global scope, where the program's copy comes first. */
static int try_resident(const char *soname)
{
    /* Asked of the loaded objects' names first: for a name no loaded
     * object has, glibc's RTLD_NOLOAD searches the file system (ld.so.cache
     * opened and mapped, the file found opened and read: 9 system calls in
     * each traced process, which nearly never has a libunwind of its own). */
    if (!dl_lookup_loaded(soname))
        return 0;
    void *h = dl_real_dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    if (!bind_all(h, soname)) {
        dl_real_dlclose(h);
        return 0;
    }
    handle = h;
    return 1;
}

/* dir_of_self + "/" + name into buf (0 when it does not fit or libtrace.so
 * has no path). */
static int beside_self(char *buf, size_t cap, const char *name)
{
    Dl_info self;
    if (!dladdr((void *)unwind_lib_load, &self) || !self.dli_fname)
        return 0;
    const char *slash = strrchr(self.dli_fname, '/');
    if (!slash)
        return 0;
    int n = snprintf(buf, cap, "%.*s/%s", (int)(slash - self.dli_fname), self.dli_fname, name);
    return n > 0 && (size_t)n < cap;
}

/* In order: a libunwind 1.x the program loaded already (try_resident); our
 * copy under a soname of its own beside libtrace.so (the build makes it,
 * scripts/lib/install.cmake installs it); the system's, by the path the
 * build found it at; the same name beside libtrace.so (scripts/gpu-check
 * carries it there for a machine without it).  `problem` keeps the first
 * failure, the one of the copy we meant to use. */
int unwind_lib_load(void)
{
    if (handle)
        return 1;
    const char *base = strrchr(TRACE_LIBUNWIND_PATH, '/');
    base = base ? base + 1 : TRACE_LIBUNWIND_PATH;
    char first[sizeof problem] = "";
    char path[PATH_MAX];
    int ok = try_resident(base);
#ifdef TRACE_LIBUNWIND_PRIVATE
    if (!ok && beside_self(path, sizeof path, TRACE_LIBUNWIND_PRIVATE)) {
        ok = try_path(path);
        if (!ok)
            memcpy(first, problem, sizeof first);
    }
#endif
    if (!ok) {
        ok = try_path(TRACE_LIBUNWIND_PATH);
        if (!ok && !first[0])
            memcpy(first, problem, sizeof first);
    }
    if (!ok && beside_self(path, sizeof path, base))
        ok = try_path(path);
    dlerror();   /* the program's first dlerror() is not about our tries */
    if (ok)
        problem[0] = 0;
    else if (first[0])
        memcpy(problem, first, sizeof problem);
    return ok;
}

struct link_map *unwind_lib_map(void)
{
    struct link_map *map = NULL;
    if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0)
        return NULL;
    return map;
}

const char *unwind_lib_problem(void)
{
    return problem[0] ? problem : NULL;
}
