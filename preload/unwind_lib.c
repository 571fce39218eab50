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
 * So the library is opened here, by the path the build found it at (or the
 * same name beside libtrace.so, where a relocated copy of the tools carries
 * it), RTLD_LOCAL: its symbols do not join the program's, and an object of
 * the same soname already loaded from elsewhere (the program's own, by
 * path or DT_NEEDED) is not taken, since glibc matches a path by file, not
 * by soname.  Unless that object is a libunwind with all we call (another
 * build of 1.x): then it is used, as before (try_resident says why).  RTLD_NOW: each of its imports is bound here, at start, so a
 * dependency that lacks one (a foreign liblzma.so.5) is an error now, not a
 * crash in the middle of a walk, and no lazy binding runs in a signal
 * handler.  A copy missing any function we call is closed again and the
 * next one tried; with none, native stacks are left out (an INFO record
 * says why) and the program runs as it would without us.
 */
#include "unwind_lib.h"
#include "dl_hooks.h"

#include <dlfcn.h>
#include <limits.h>
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

int unwind_lib_load(void)
{
    if (handle)
        return 1;
    const char *base = strrchr(TRACE_LIBUNWIND_PATH, '/');
    if ((base && try_resident(base + 1)) || try_path(TRACE_LIBUNWIND_PATH))
        goto loaded;
    /* A copy beside libtrace.so (scripts/gpu-check carries one there). */
    Dl_info self;
    if (base && dladdr((void *)unwind_lib_load, &self) && self.dli_fname) {
        const char *slash = strrchr(self.dli_fname, '/');
        char beside[PATH_MAX];
        if (slash && snprintf(beside, sizeof beside, "%.*s%s", (int)(slash - self.dli_fname),
                              self.dli_fname, base) < (int)sizeof beside) {
            char first[sizeof problem];
            memcpy(first, problem, sizeof first);
            if (try_path(beside))
                goto loaded;
            snprintf(problem, sizeof problem, "%s", first);
        }
    }
    dlerror();   /* the program's first dlerror() is not about our tries */
    return 0;
loaded:
    dlerror();
    problem[0] = 0;
    return 1;
}

const char *unwind_lib_problem(void)
{
    return problem[0] ? problem : NULL;
}

void *unwind_lib_handle(void)
{
    return handle;
}
