/*
 * mmap_one_address.c - under the preload, mmap and mmap64 are one function
 * at one address, ours, as they are in glibc where off_t is 64 bits
 * (preload.mmap_one_address).
 *
 * memray compares the address its "mmap" hook was built against (mmap64:
 * its headers ask for 64-bit offsets) with dlsym's "mmap", and where the
 * two differ it prints "Memray WARNING: Correcting symbol for mmap" on the
 * program's stderr: ours were two functions, so every `memray run` of a
 * traced program printed it.  Exits 1 with what differs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void)
{
#if defined(__OFF_T_MATCHES_OFF64_T)
    void *m = dlsym(RTLD_DEFAULT, "mmap"), *m64 = dlsym(RTLD_DEFAULT, "mmap64");
    Dl_info info;
    if (!m || !dladdr(m, &info) || !strstr(info.dli_fname, "libtrace")) {
        fprintf(stderr, "mmap is not the preload's (%s)\n", m && dladdr(m, &info) ? info.dli_fname : "?");
        return 1;
    }
    if (m != m64) {
        fprintf(stderr, "mmap %p and mmap64 %p differ\n", m, m64);
        return 1;
    }
#endif
    /* Still a working mmap. */
    void *p = mmap64(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    ((char *)p)[100] = 1;
    return munmap(p, 4u << 20) != 0;
}
