/*
 * self_module.h - this program's own module as the recorder would log it:
 * path, load bias, build-id and PT_LOAD segments.
 */
#ifndef SELF_MODULE_H
#define SELF_MODULE_H

#include <link.h>
#include <string.h>
#include <unistd.h>

#include "trace_format.h"

typedef struct self_module {
    tf_module m;
    uint8_t build_id[64];
    tf_segment segs[16];
    char path[4096];
} self_module;

static void self_notes(self_module *s, uintptr_t bias, const ElfW(Phdr) *ph)
{
    const uint8_t *p = (const uint8_t *)(bias + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
        const uint8_t *desc = p + sizeof *nh + ((nh->n_namesz + 3) & ~3u);
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_descsz <= sizeof s->build_id) {
            memcpy(s->build_id, desc, nh->n_descsz);
            s->m.build_id_len = nh->n_descsz;
        }
        p = desc + ((nh->n_descsz + 3) & ~3u);
    }
}

static int self_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
    self_module *s = arg;
    (void)size;
    s->m.base = info->dlpi_addr;  /* the main program comes first */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && s->m.nsegments < 16)
            s->segs[s->m.nsegments++] = (tf_segment){ ph->p_vaddr, ph->p_memsz, ph->p_flags };
        if (ph->p_type == PT_NOTE)
            self_notes(s, info->dlpi_addr, ph);
    }
    return 1;
}

static inline void self_module_get(self_module *s)
{
    memset(s, 0, sizeof *s);
    dl_iterate_phdr(self_phdr, s);
    ssize_t n = readlink("/proc/self/exe", s->path, sizeof s->path - 1);
    s->path[n > 0 ? n : 0] = '\0';
    s->m.path = s->path;
    s->m.build_id = s->build_id;
    s->m.segments = s->segs;
}

#endif
