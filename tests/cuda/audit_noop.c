/*
 * audit_noop.c - an LD_AUDIT library that watches every object and does
 * nothing (what sotruss, latrace and loader-auditing tools start from).
 * Under LD_AUDIT the preloaded libraries' static TLS comes out of glibc's
 * small surplus.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <stdint.h>

unsigned int la_version(unsigned int version)
{
    (void)version;
    return LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    (void)map;
    (void)lmid;
    (void)cookie;
    return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}
