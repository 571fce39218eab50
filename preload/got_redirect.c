/*
 * got_redirect.c - send loaded objects' calls of a function to ours.
 *
 * A preloaded definition wins the symbol lookup against every library, but
 * not against the program: a static interpreter defines PyObject_Init
 * itself, and extension modules' calls are bound to that.  They still go
 * through each module's own GOT, a slot per imported function that the
 * dynamic linker filled (JUMP_SLOT for calls through the PLT, GLOB_DAT for
 * calls and addresses through the GOT).  Rewriting that slot sends the
 * module's calls to our wrapper, which calls the program's definition: the
 * same effect as interposition, for the objects that import the name.
 *
 * Only a slot that holds the definition that won (or, for a name the object
 * does not define, its own PLT: lazy binding, not resolved yet) is
 * rewritten; one bound elsewhere (the object's own definition, a library
 * opened RTLD_LOCAL with its own) is left as it is.  The program's own calls are direct and have no slot to take.
 *
 * All of it runs inside dl_iterate_phdr's callback, under the loader's lock:
 * no object can be loaded or unloaded meanwhile, two threads' calls cannot
 * interleave, and fork resets that lock in the child.
 */
#include "got_redirect.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

/* Objects already scanned, by load address and program headers (a pair no
 * two loaded objects share).  Touched only under the loader's lock.  Once
 * full, every call scans the objects beyond it again: slower, still right. */
#define SEEN_MAX 2048
typedef struct seen_object {
    uintptr_t base;
    const void *phdr;
} seen_object;
static seen_object seen[SEEN_MAX];
static unsigned nseen;
static unsigned long long seen_subs;    /* unloads counted when seen[] was filled */

typedef struct pass {
    const got_target *targets;
    unsigned n;
    unsigned rewritten;
    uintptr_t self;                     /* libtrace.so's load address */
    uintptr_t only;                     /* got_redirect_object: that object's, or 0 */
} pass;

int got_redirect_supported(void)
{
#if defined(R_JUMP_SLOT)
    return 1;
#else
    return 0;
#endif
}

#if defined(R_JUMP_SLOT)

/* glibc has made the dynamic section's addresses absolute; a loader that
 * has not leaves them relative to the load address. */
static uintptr_t dyn_address(uintptr_t base, ElfW(Addr) p)
{
    return p < base ? base + p : p;
}

typedef struct object {
    uintptr_t base, lo, hi;             /* load address, mapped range */
    uintptr_t relro_lo, relro_hi;       /* the pages the loader made read-only */
    const ElfW(Sym) *symtab;
    const char *strtab;
} object;

/* The loader protects whole pages only: the RELRO segment's last partial
 * page stays writable (glibc's _dl_protect_relro), so it is never made
 * read-only here either. */
static int write_slot(const object *o, void **slot, void *value)
{
    uintptr_t a = (uintptr_t)slot;
    if (a < o->relro_lo || a >= o->relro_hi) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return 1;
    }
    uintptr_t size = (uintptr_t)sysconf(_SC_PAGESIZE);
    void *page = (void *)(a & ~(size - 1));
    if (mprotect(page, size, PROT_READ | PROT_WRITE))
        return 0;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    mprotect(page, size, PROT_READ);
    return 1;
}

/* Returns how many slots for a target were left in a state that is neither
 * ours, the winner's, nor the object's PLT: bound elsewhere, or an object
 * another thread's dlopen has listed but not relocated yet. */
static unsigned scan_relocations(const object *o, const ElfW(Rela) *rel, size_t bytes, pass *ps)
{
    unsigned undecided = 0;
    if (!rel)
        return 0;
    for (size_t i = 0; i < bytes / sizeof *rel; i++) {
        unsigned long type = ELF64_R_TYPE(rel[i].r_info), sym = ELF64_R_SYM(rel[i].r_info);
        if ((type != R_JUMP_SLOT && type != R_GLOB_DAT) || !sym)
            continue;
        const char *name = o->strtab + o->symtab[sym].st_name;
        for (unsigned k = 0; k < ps->n; k++) {
            const got_target *t = &ps->targets[k];
            if (name[0] != t->name[0] || strcmp(name, t->name))
                continue;
            void **slot = (void **)(o->base + rel[i].r_offset);
            uintptr_t now = (uintptr_t)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
            /* Lazy binding leaves a slot at the object's own PLT until the
             * first call; an object that defines the name itself may be
             * bound to that definition, inside it too, and keeps it. */
            int unresolved = type == R_JUMP_SLOT && now >= o->lo && now < o->hi &&
                             (o->symtab[sym].st_shndx == SHN_UNDEF || ps->only);
            if (now == (uintptr_t)t->to)
                break;
            if (now == (uintptr_t)t->from || unresolved)
                ps->rewritten += (unsigned)write_slot(o, slot, t->to);
            else
                undecided++;
            break;
        }
    }
    return undecided;
}

/* Returns scan_relocations' count of undecided slots. */
static unsigned scan_object(const struct dl_phdr_info *info, pass *ps)
{
    object o = { .base = info->dlpi_addr, .lo = UINTPTR_MAX };
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = o.base + ph->p_vaddr, end = start + ph->p_memsz;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)start;
        else if (ph->p_type == PT_LOAD) {
            o.lo = start < o.lo ? start : o.lo;
            o.hi = end > o.hi ? end : o.hi;
        } else if (ph->p_type == PT_GNU_RELRO) {
            o.relro_lo = start & ~(page - 1);
            o.relro_hi = end & ~(page - 1);
        }
    }
    if (!dyn)
        return 0;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_bytes = 0, rela_bytes = 0;
    int plt_rela = 1;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: o.symtab = (const ElfW(Sym) *)dyn_address(o.base, d->d_un.d_ptr); break;
        case DT_STRTAB: o.strtab = (const char *)dyn_address(o.base, d->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_address(o.base, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmprel_bytes = d->d_un.d_val; break;
        case DT_PLTREL: plt_rela = d->d_un.d_val == DT_RELA; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dyn_address(o.base, d->d_un.d_ptr); break;
        case DT_RELASZ: rela_bytes = d->d_un.d_val; break;
        default: break;
        }
    }
    if (!o.symtab || !o.strtab)
        return 0;
    unsigned undecided = plt_rela ? scan_relocations(&o, jmprel, jmprel_bytes, ps) : 0;
    return undecided + scan_relocations(&o, rela, rela_bytes, ps);
}

static int already_seen(const struct dl_phdr_info *info)
{
    for (unsigned i = 0; i < nseen; i++)
        if (seen[i].base == info->dlpi_addr && seen[i].phdr == info->dlpi_phdr)
            return 1;
    return 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    pass *ps = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs &&
        info->dlpi_subs != seen_subs) {
        nseen = 0;               /* something was unloaded: its address may hold another now */
        seen_subs = info->dlpi_subs;
    }
    /* The program (named ""): its calls of its own functions are direct. */
    if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == ps->self || already_seen(info))
        return 0;
    /* An object with an undecided slot is looked at again next time: it may
     * be one that another thread is loading, listed before its relocation
     * (the list's lock is not the one dlopen holds while relocating); that
     * thread's own dlopen calls us again once it is done. */
    if (!scan_object(info, ps) && nseen < SEEN_MAX)
        seen[nseen++] = (seen_object){ .base = info->dlpi_addr, .phdr = info->dlpi_phdr };
    return 0;
}

static int visit_only(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    pass *ps = arg;
    if (info->dlpi_addr != ps->only || !info->dlpi_name || !info->dlpi_name[0])
        return 0;
    scan_object(info, ps);
    return 1;
}

unsigned got_redirect_object(uintptr_t base, const got_target *targets, unsigned n)
{
    pass ps = { .targets = targets, .n = n, .only = base };
    if (!base)
        return 0;
    dl_iterate_phdr(visit_only, &ps);
    return ps.rewritten;
}

unsigned got_redirect(const got_target *targets, unsigned n)
{
    pass ps = { .targets = targets, .n = n };
    Dl_info where;
    struct link_map *self = NULL;
    if (!dladdr1((void *)got_redirect, &where, (void **)&self, RTLD_DL_LINKMAP) || !self)
        return 0;
    ps.self = self->l_addr;
    dl_iterate_phdr(visit, &ps);
    return ps.rewritten;
}

#else

unsigned got_redirect(const got_target *targets, unsigned n)
{
    (void)targets;
    (void)n;
    return 0;
}

unsigned got_redirect_object(uintptr_t base, const got_target *targets, unsigned n)
{
    (void)base;
    (void)targets;
    (void)n;
    return 0;
}

#endif
