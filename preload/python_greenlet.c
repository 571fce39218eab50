/*
 * python_greenlet.c - greenlet's own mark of a stack switch in progress
 * (see python_greenlet.h).
 */
#include "python_greenlet.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* greenlet 2 and 3 (greenlet_slp_switch.hpp): `static greenlet::Greenlet*
 * volatile switching_thread_state`, mangled as a file-local name. */
#define SWITCHING_SYMBOL "_ZL22switching_thread_state"

void *_Atomic greenlet_switching_at[GREENLET_MAX];
_Atomic int greenlet_unwatched;
static uintptr_t watched_base[GREENLET_MAX];   /* the modules' load bases */
/* Load bases of modules found without the variable, not read again at
 * each dlopen (0: free; a module is never loaded at 0). */
static uintptr_t unwatched_base[GREENLET_MAX];

/* The symbol's value in the ELF file at path (a defined object of pointer
 * size, not thread-local), or 0. */
static uintptr_t symtab_value(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(ElfW(Ehdr)))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return 0;
    const unsigned char *file = map;
    size_t size = (size_t)st.st_size;
    uintptr_t value = 0;
    const ElfW(Ehdr) *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
        eh->e_shoff > size || (size - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum)
        goto done;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(file + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum && !value; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum ||
            sh[i].sh_entsize != sizeof(ElfW(Sym)))
            continue;
        const ElfW(Shdr) *strs = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > size || size - sh[i].sh_offset < sh[i].sh_size ||
            strs->sh_offset > size || size - strs->sh_offset < strs->sh_size)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(file + sh[i].sh_offset);
        const char *names = (const char *)(file + strs->sh_offset);
        size_t count = sh[i].sh_size / sizeof(ElfW(Sym));
        for (size_t k = 0; k < count; k++) {
            if (sym[k].st_name >= strs->sh_size || sym[k].st_shndx == SHN_UNDEF ||
                ELF64_ST_TYPE(sym[k].st_info) != STT_OBJECT || sym[k].st_size != sizeof(void *))
                continue;
            if (strnlen(names + sym[k].st_name, strs->sh_size - sym[k].st_name) ==
                    sizeof SWITCHING_SYMBOL - 1 &&
                memcmp(names + sym[k].st_name, SWITCHING_SYMBOL, sizeof SWITCHING_SYMBOL - 1) == 0) {
                value = sym[k].st_value;
                break;
            }
        }
    }
done:
    munmap(map, size);
    return value;
}

static int is_greenlet_module(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "_greenlet.", 10) == 0 && strstr(base, ".so") != NULL;
}

static int look(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (!info->dlpi_name || !is_greenlet_module(info->dlpi_name))
        return 0;
    int free_slot = -1;
    for (int i = 0; i < GREENLET_MAX; i++) {
        if (atomic_load(&greenlet_switching_at[i]) && watched_base[i] == info->dlpi_addr)
            return 0;   /* watched already */
        if (unwatched_base[i] == info->dlpi_addr)
            return 0;   /* known not to be watchable */
        if (free_slot < 0 && !atomic_load(&greenlet_switching_at[i]))
            free_slot = i;
    }
    uintptr_t value = free_slot < 0 ? 0 : symtab_value(info->dlpi_name);
    if (!value) {
        atomic_store_explicit(&greenlet_unwatched, 1, memory_order_relaxed);
        for (int i = 0; i < GREENLET_MAX; i++)
            if (!unwatched_base[i]) {
                unwatched_base[i] = info->dlpi_addr;
                break;
            }
        return 0;
    }
    watched_base[free_slot] = info->dlpi_addr;
    atomic_store(&greenlet_switching_at[free_slot], (void *)(info->dlpi_addr + value));
    return 0;
}

void python_greenlet_on_dlopen(void)
{
    /* Two threads' dlopens: one looks, the other's module is looked at by
     * its own next dlopen or the first's walk (both walk every object). */
    static atomic_int busy;
    if (atomic_exchange(&busy, 1))
        return;
    dl_iterate_phdr(look, NULL);
    atomic_store(&busy, 0);
}
