/*
 * got_slot.c - the GOT slot through which a loaded object calls a function
 * (see got_slot.h).
 *
 * The object's dynamic relocations name every slot the loader fills: a
 * JUMP_SLOT per function called through the PLT, a GLOB_DAT per function
 * called or taken through the GOT.  Read inside dl_iterate_phdr's callback,
 * under the loader's lock: the object cannot be unloaded meanwhile.
 */
#include "got_slot.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

#if defined(R_JUMP_SLOT)

typedef struct query {
    uintptr_t addr;
    const char *const *names;
    void *const **slots;
    int n;
} query;

/* glibc has made the dynamic section's addresses absolute; a loader that
 * has not leaves them relative to the load address. */
static uintptr_t dyn_address(uintptr_t base, ElfW(Addr) p)
{
    return p < base ? base + p : p;
}

static int holds(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr - start < ph->p_memsz)
            return 1;
    }
    return 0;
}

/* For each name not found yet, the first relocation of `type` for it in
 * the table.  `skip`: the table's leading RELATIVE relocations
 * (DT_RELACOUNT), which name no symbol: a libpython has some twenty
 * thousand, and looking at each one four times was 0.9 M instructions of
 * every Python process's start. */
static void find(const struct dl_phdr_info *info, const ElfW(Sym) *symtab, const char *strtab,
                 const ElfW(Rela) *rel, size_t bytes, size_t skip, unsigned long type, const query *q)
{
    if (!rel)
        return;
    size_t count = bytes / sizeof *rel;
    for (size_t i = skip < count ? skip : count; i < count; i++) {
        unsigned long sym = ELF64_R_SYM(rel[i].r_info);
        if (!sym || ELF64_R_TYPE(rel[i].r_info) != type)
            continue;
        const char *name = strtab + symtab[sym].st_name;
        for (int k = 0; k < q->n; k++)
            if (!q->slots[k] && strcmp(name, q->names[k]) == 0)
                q->slots[k] = (void *const *)(info->dlpi_addr + rel[i].r_offset);
    }
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    query *q = arg;
    if (!holds(info, q->addr))
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 1;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_bytes = 0, rela_bytes = 0, relative = 0;
    int plt_rela = 1;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_address(info->dlpi_addr, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)dyn_address(info->dlpi_addr, d->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_address(info->dlpi_addr, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmprel_bytes = d->d_un.d_val; break;
        case DT_PLTREL: plt_rela = d->d_un.d_val == DT_RELA; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dyn_address(info->dlpi_addr, d->d_un.d_ptr); break;
        case DT_RELASZ: rela_bytes = d->d_un.d_val; break;
        case DT_RELACOUNT: relative = d->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab)
        return 1;
    /* A JUMP_SLOT first; a GLOB_DAT for the names without one. */
    if (plt_rela)
        find(info, symtab, strtab, jmprel, jmprel_bytes, 0, R_JUMP_SLOT, q);
    find(info, symtab, strtab, rela, rela_bytes, relative, R_GLOB_DAT, q);
    return 1;
}

void got_slot_find(const void *addr, const char *const *names, void *const **slots, int n)
{
    for (int k = 0; k < n; k++)
        slots[k] = NULL;
    query q = { .addr = (uintptr_t)addr, .names = names, .slots = slots, .n = n };
    if (addr)
        dl_iterate_phdr(visit, &q);
}

#else

void got_slot_find(const void *addr, const char *const *names, void *const **slots, int n)
{
    (void)addr;
    (void)names;
    for (int k = 0; k < n; k++)
        slots[k] = NULL;
}

#endif
