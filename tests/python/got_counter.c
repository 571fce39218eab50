/*
 * got_counter - what memray's Tracker does to libpython, in small: the
 * interpreter's GOT slots for malloc, calloc, realloc and free are
 * rewritten at run time (found through the dynamic relocations, the page
 * made writable and left so, the slot swapped) to wrappers that count each
 * call and go on to what the slot held.  In libpython, or in the program
 * for an interpreter without one.  test_got_watcher.py loads it through
 * ctypes once the interpreter runs: got_patch(), got_reset(), the workload,
 * got_count(i), got_restore().
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { MALLOC, CALLOC, REALLOC, FREE, N };
static const char *const names[N] = { "malloc", "calloc", "realloc", "free" };

static void **slots[64][N];
static unsigned nslots[N];
static void *original[N];
static unsigned long counts[N];

static void *count_malloc(size_t size)
{
    __atomic_fetch_add(&counts[MALLOC], 1, __ATOMIC_RELAXED);
    return ((void *(*)(size_t))original[MALLOC])(size);
}

static void *count_calloc(size_t n, size_t each)
{
    __atomic_fetch_add(&counts[CALLOC], 1, __ATOMIC_RELAXED);
    return ((void *(*)(size_t, size_t))original[CALLOC])(n, each);
}

static void *count_realloc(void *p, size_t size)
{
    __atomic_fetch_add(&counts[REALLOC], 1, __ATOMIC_RELAXED);
    return ((void *(*)(void *, size_t))original[REALLOC])(p, size);
}

static void count_free(void *p)
{
    __atomic_fetch_add(&counts[FREE], 1, __ATOMIC_RELAXED);
    ((void (*)(void *))original[FREE])(p);
}

static void *const wrappers[N] = {
    (void *)count_malloc, (void *)count_calloc, (void *)count_realloc, (void *)count_free,
};

static uintptr_t target;     /* an address inside the interpreter's object */

static void take(const struct dl_phdr_info *info, const ElfW(Sym) *symtab, const char *strtab,
                 const ElfW(Rela) *rel, size_t bytes)
{
    for (size_t i = 0; rel && i < bytes / sizeof *rel; i++) {
        unsigned long type = ELF64_R_TYPE(rel[i].r_info), sym = ELF64_R_SYM(rel[i].r_info);
        if (!sym || (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT))
            continue;
        for (unsigned k = 0; k < N; k++)
            if (strcmp(strtab + symtab[sym].st_name, names[k]) == 0 && nslots[k] < 64)
                slots[nslots[k]++][k] = (void **)(info->dlpi_addr + rel[i].r_offset);
    }
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const ElfW(Dyn) *dyn = NULL;
    int inside = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)start;
        if (ph->p_type == PT_LOAD && target - start < ph->p_memsz)
            inside = 1;
    }
    if (!inside || !dyn)
        return 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_bytes = 0, rela_bytes = 0;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        uintptr_t p = d->d_un.d_ptr < info->dlpi_addr ? info->dlpi_addr + d->d_un.d_ptr : d->d_un.d_ptr;
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)p; break;
        case DT_STRTAB: strtab = (const char *)p; break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)p; break;
        case DT_PLTRELSZ: jmprel_bytes = d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)p; break;
        case DT_RELASZ: rela_bytes = d->d_un.d_val; break;
        default: break;
        }
    }
    if (symtab && strtab) {
        take(info, symtab, strtab, jmprel, jmprel_bytes);
        take(info, symtab, strtab, rela, rela_bytes);
    }
    return 1;
}

static void write_slot(void **slot, void *value)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    mprotect((void *)((uintptr_t)slot & ~(page - 1)), page, PROT_READ | PROT_WRITE);
    *slot = value;
}

/* The number of slots rewritten (0: none found, the test cannot work). */
__attribute__((visibility("default"))) int got_patch(void)
{
    /* Not Py_Initialize: the preload exports one of its own. */
    void *py = dlsym(RTLD_DEFAULT, "PyMem_RawMalloc");
    if (!py)
        return -1;
    target = (uintptr_t)py;
    dl_iterate_phdr(visit, NULL);
    int patched = 0;
    for (unsigned k = 0; k < N; k++) {
        /* What the loader bound.  Not dlsym's answer: a program linked
         * without PIE that takes malloc's address (Debian's python3.11)
         * makes that its own PLT entry, which jumps through the very slot
         * rewritten here. */
        if (nslots[k])
            original[k] = *slots[0][k];
        for (unsigned i = 0; i < nslots[k]; i++, patched++)
            write_slot(slots[i][k], wrappers[k]);
    }
    return patched;
}

__attribute__((visibility("default"))) void got_restore(void)
{
    for (unsigned k = 0; k < N; k++)
        for (unsigned i = 0; i < nslots[k]; i++)
            write_slot(slots[i][k], original[k]);
}

__attribute__((visibility("default"))) void got_reset(void)
{
    for (unsigned k = 0; k < N; k++)
        __atomic_store_n(&counts[k], 0, __ATOMIC_RELAXED);
}

__attribute__((visibility("default"))) unsigned long got_count(int which)
{
    return which >= 0 && which < N ? __atomic_load_n(&counts[which], __ATOMIC_RELAXED) : 0;
}
