/*
 * unwind_pipe.c - libunwind's address validation, without its pipe.
 *
 * Before it loads from an address it is not sure of, libunwind (1.x) asks
 * whether the page is readable by writing one byte from it into a pipe it
 * opens for the purpose and keeps open: two descriptors the program sees,
 * on the lowest free numbers (3 and 4, opened from our constructor), which
 * CPython's own tests notice, and which libunwind reads, closes and writes
 * again if the program closed them and reused the numbers.
 *
 * So libunwind's own imports of pipe2, pipe, read, close, write and syscall
 * (its GOT entries, nobody else's) are pointed here: the "pipe" is two
 * numbers no descriptor can have (the kernel caps descriptors below
 * 2^31 - 64), reading it says "empty", closing it succeeds, and the write
 * is answered by readable_run.h's check of the same bytes, which fails
 * with EFAULT exactly where the write would have.  Calls on any other descriptor go to
 * the real functions.
 */
#include "unwind_pipe.h"
#include "unwind_lib.h"
#include "native_stack.h"
#include "readable_run.h"
#include "real_fns.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAKE_READ_END (INT_MAX - 1)
#define FAKE_WRITE_END INT_MAX

static int is_fake(int fd)
{
    return fd == FAKE_READ_END || fd == FAKE_WRITE_END;
}

/* Would write(fd, addr, n) find addr readable?  As write, -1/EFAULT if not
 * (libunwind asks about at most a word). */
static ssize_t readable(const void *addr, size_t n)
{
    if (readable_bytes(addr, n < 8 ? n : 8))
        return (ssize_t)(n < 8 ? n : 8);
    errno = EFAULT;
    return -1;
}

static int fake_pipe2(int fds[2], int flags)
{
    (void)flags;
    fds[0] = FAKE_READ_END;
    fds[1] = FAKE_WRITE_END;
    return 0;
}

static int fake_pipe(int fds[2])
{
    return fake_pipe2(fds, 0);
}

static ssize_t fake_read(int fd, void *buf, size_t n)
{
    if (is_fake(fd)) {
        errno = EAGAIN;   /* an empty non-blocking pipe: still open */
        return -1;
    }
    return REAL(read, ssize_t (*)(int, void *, size_t))(fd, buf, n);
}

static int fake_close(int fd)
{
    if (is_fake(fd))
        return 0;
    return REAL(close, int (*)(int))(fd);
}

static ssize_t fake_write(int fd, const void *buf, size_t n)
{
    if (is_fake(fd))
        return readable(buf, n);
    return REAL(write, ssize_t (*)(int, const void *, size_t))(fd, buf, n);
}

static long fake_syscall(long number, ...)
{
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (number == SYS_write && is_fake((int)a[0]))
        return readable((const void *)a[1], (size_t)a[2]);
    return syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* During our own walks a change of the mask is left out (native_stack.c
 * says why); `old` is then the mask as it is, for the restore libunwind
 * makes, also left out, before our walk ends.  Anyone else's use of
 * libunwind masks as it always did. */
static int fake_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!native_stack_walking())
        return sigprocmask(how, set, old);
    if (!set)
        return sigprocmask(how, NULL, old);
    if (old)
        sigemptyset(old);
    return 0;
}

static const struct {
    const char *name;
    void *fn;
} replacements[] = {
    { "pipe2", (void *)fake_pipe2 }, { "pipe", (void *)fake_pipe },
    { "read", (void *)fake_read },   { "close", (void *)fake_close },
    { "write", (void *)fake_write }, { "syscall", (void *)fake_syscall },
    { "sigprocmask", (void *)fake_sigprocmask }, { "pthread_sigmask", (void *)fake_sigprocmask },
};

#if defined(__x86_64__)
#define IS_SLOT(type) ((type) == R_X86_64_JUMP_SLOT || (type) == R_X86_64_GLOB_DAT)
#elif defined(__aarch64__)
#define IS_SLOT(type) ((type) == R_AARCH64_JUMP_SLOT || (type) == R_AARCH64_GLOB_DAT)
#endif

struct object {
    uintptr_t base;
    uintptr_t relro_lo, relro_hi;   /* read-only after relocation */
};

static int find_relro(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct object *o = arg;
    if (info->dlpi_addr != o->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            o->relro_lo = o->base + info->dlpi_phdr[i].p_vaddr;
            o->relro_hi = o->relro_lo + info->dlpi_phdr[i].p_memsz;
        }
    return 1;
}

static int patch_slot(const struct object *o, void **slot, void *fn)
{
    uintptr_t at = (uintptr_t)slot;
    int relro = at >= o->relro_lo && at < o->relro_hi;
    uintptr_t page = at & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
    size_t len = at + sizeof *slot - page;
    if (relro && mprotect((void *)page, len, PROT_READ | PROT_WRITE) != 0)
        return 0;
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    if (relro)
        mprotect((void *)page, len, PROT_READ);
    return 1;
}

/* Redirect the object's relocations (one table) that name a replaced
 * function.  Returns how many slots were patched. */
static int patch_table(const struct object *o, const ElfW(Rela) *rel, size_t bytes,
                       const ElfW(Sym) *symtab, const char *strtab)
{
    int patched = 0;
    for (size_t i = 0; rel && i < bytes / sizeof *rel; i++) {
        if (!IS_SLOT(ELF64_R_TYPE(rel[i].r_info)))
            continue;
        const char *name = strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name;
        for (size_t r = 0; r < sizeof replacements / sizeof *replacements; r++)
            if (!strcmp(name, replacements[r].name))
                patched += patch_slot(o, (void **)(o->base + rel[i].r_offset), replacements[r].fn);
    }
    return patched;
}

int unwind_pipe_install(void)
{
    /* The handle's map, not dladdr1 on one of its functions: that searched
     * the library's symbols for the nearest one (18,000 instructions at
     * every start) to give the same map. */
    struct link_map *map = unwind_lib.backtrace ? unwind_lib_map() : NULL;
    if (!map)
        return 0;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_size = 0, rela_size = 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)d->d_un.d_ptr; break;
        case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)d->d_un.d_ptr; break;
        case DT_RELASZ: rela_size = d->d_un.d_val; break;
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)d->d_un.d_ptr; break;
        case DT_STRTAB: strtab = (const char *)d->d_un.d_ptr; break;
        default: break;
        }
    }
    if (!symtab || !strtab)
        return 0;
    /* glibc relocates these entries in place; where it does not, they are
     * still offsets from the load address. */
    uintptr_t base = map->l_addr;
#define RELOCATED(p) ((p) && (uintptr_t)(p) < base ? (__typeof__(p))((uintptr_t)(p) + base) : (p))
    jmprel = RELOCATED(jmprel);
    rela = RELOCATED(rela);
    symtab = RELOCATED(symtab);
    strtab = RELOCATED(strtab);
#undef RELOCATED
    struct object o = { base, 0, 0 };
    dl_iterate_phdr(find_relro, &o);
    return patch_table(&o, jmprel, jmprel_size, symtab, strtab) +
           patch_table(&o, rela, rela_size, symtab, strtab);
}
