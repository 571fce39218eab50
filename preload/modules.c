/*
 * modules.c - MODULE_LOAD / MODULE_UNLOAD records from dl_iterate_phdr.
 *
 * A rescan takes a snapshot outside the recorder's lock (dl_iterate_phdr
 * takes the loader's lock; we never call out under ours), then compares it
 * with the table of recorded modules under the lock.  Two rescans racing
 * apply in snapshot order: the loader's adds+subs counters only grow, and a
 * snapshot older than the one last applied is dropped.
 *
 * Both tables live in memory mapped here, not the program's malloc: a
 * dlopen that loads an object and a dlclose that unloads one rescan, and
 * the snapshot (some 30 KiB, and a path per object) went through the
 * program's malloc and free, which a program counting its heap (mallinfo2,
 * a malloc of its own) saw.
 */
#include "modules.h"
#include "fork_gate.h"
#include "recorder_core.h"

#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SEGMENTS 16
#define MAX_BUILD_ID 64

#define NO_PATH SIZE_MAX

struct module {
    size_t path;                      /* offset in the list's names, or NO_PATH */
    uint64_t base;
    uint32_t id;
    int seen;                         /* present in the snapshot being applied */
    uint8_t build_id[MAX_BUILD_ID];
    uint32_t build_id_len;
    tf_segment segments[MAX_SEGMENTS];
    uint32_t nsegments;
};

struct module_list {
    int lasting;                      /* the recorded table: see LASTING_* */
    struct module *items;
    size_t count, cap;
    size_t items_bytes;               /* the items' mapping */
    char *names;                      /* the paths, each ending in NUL */
    size_t names_len, names_cap;
    size_t names_live;                /* bytes of names still referred to */
    unsigned long long generation;    /* dlpi_adds + dlpi_subs of the snapshot */
};

/* The recorded table's mappings are made once, at the first rescan, large
 * enough for some 1,000 modules and their paths (touched only as far as
 * they are used; 1.25 MiB of address space with the snapshot's, which
 * python_address_space counts: 4 MiB each made it fail): a mapping made
 * later, at a rescan after a dlclose, takes the place the unloaded object
 * had (the kernel hands out the highest free range), which a program may
 * map again itself (cuda.plugin_reload maps its runtime's old place with
 * MAP_FIXED_NOREPLACE).  Only a process with more modules than that makes
 * one later. */
#define LASTING_ITEMS (512u << 10)   /* also a rescan's snapshot (modules_rescan) */
#define LASTING_NAMES (128u << 10)

static struct module_list recorded = { .lasting = 1 };   /* under the recorder's lock */
/* recorded.generation, readable without the lock (a hint: a stale value
 * costs one rescan more). */
static _Atomic unsigned long long applied_generation;
static char exe_path[4096];

/* A larger mapping with the first `used` bytes of *p, which is unmapped;
 * 0 when no memory (*p is left as it was).  The first is `first` bytes,
 * touched only as far as it is used. */
static int grow(void **p, size_t *cap, size_t used, size_t want, size_t first)
{
    size_t bytes = *cap ? *cap * 2 : first;
    while (bytes < want)
        bytes *= 2;
    void *fresh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (fresh == MAP_FAILED)
        return 0;
    if (*p) {
        memcpy(fresh, *p, used);
        munmap(*p, *cap);
    }
    *p = fresh;
    *cap = bytes;
    return 1;
}

static void list_free(struct module_list *l)
{
    if (l->items)
        munmap(l->items, l->items_bytes);
    if (l->names)
        munmap(l->names, l->names_cap);
    *l = (struct module_list){ 0 };
}

static struct module *list_add(struct module_list *l)
{
    if (l->count == l->cap) {
        if (!grow((void **)&l->items, &l->items_bytes, l->count * sizeof *l->items,
                  (l->count + 1) * sizeof *l->items, l->lasting ? LASTING_ITEMS : 256 * sizeof *l->items))
            return NULL;
        l->cap = l->items_bytes / sizeof *l->items;
    }
    struct module *m = &l->items[l->count++];
    memset(m, 0, sizeof *m);
    m->path = NO_PATH;
    return m;
}

static const char *path_of(const struct module_list *l, const struct module *m)
{
    return m->path == NO_PATH ? NULL : l->names + m->path;
}

/* A copy of path in l's names: its offset, or NO_PATH when no memory. */
static size_t list_name(struct module_list *l, const char *path)
{
    size_t len = strlen(path) + 1;
    if (l->names_cap - l->names_len < len &&
        !grow((void **)&l->names, &l->names_cap, l->names_len, l->names_len + len, l->lasting ? LASTING_NAMES : 32768))
        return NO_PATH;
    memcpy(l->names + l->names_len, path, len);
    l->names_len += len;
    l->names_live += len;
    return l->names_len - len;
}

/* The paths of modules gone since are garbage in the names: once they are
 * half of it (a program that loads and unloads plugins in a loop), the live
 * ones move down, in place (a new mapping would take an unloaded object's
 * place: see LASTING_ITEMS).  The items hold their paths in increasing
 * order (each added at the end, with its path), so each moves only down. */
static void compact_names(struct module_list *l)
{
    if (l->names_live * 2 >= l->names_len)
        return;
    size_t at = 0;
    for (size_t i = 0; i < l->count; i++)
        if (l->items[i].path != NO_PATH) {
            if (l->items[i].path < at)
                return;                 /* out of order: keep the garbage */
            at = l->items[i].path + strlen(l->names + l->items[i].path) + 1;
        }
    at = 0;
    for (size_t i = 0; i < l->count; i++)
        if (l->items[i].path != NO_PATH) {
            size_t len = strlen(l->names + l->items[i].path) + 1;
            memmove(l->names + at, l->names + l->items[i].path, len);
            l->items[i].path = at;
            at += len;
        }
    l->names_len = l->names_live = at;
}

const char *modules_exe_path(void)
{
    if (!exe_path[0]) {
        ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
        exe_path[n > 0 ? n : 0] = '\0';
    }
    return exe_path;
}

static const char *object_path(const char *name)
{
    return name && *name ? name : modules_exe_path();
}

static void read_build_id(struct module *m, const struct dl_phdr_info *info, const ElfW(Phdr) *ph)
{
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)p;
        const uint8_t *name = p + sizeof *note;
        const uint8_t *desc = name + ((note->n_namesz + 3) & ~3u);
        if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
            note->n_descsz <= MAX_BUILD_ID && desc + note->n_descsz <= end) {
            memcpy(m->build_id, desc, note->n_descsz);
            m->build_id_len = note->n_descsz;
            return;
        }
        p = desc + ((note->n_descsz + 3) & ~3u);
    }
}

static int snapshot_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct module_list *snap = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        snap->generation = info->dlpi_adds + info->dlpi_subs;
    struct module *m = list_add(snap);
    if (!m)
        return 1;
    m->path = list_name(snap, object_path(info->dlpi_name));
    m->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE && !m->build_id_len)
            read_build_id(m, info, ph);
        if (ph->p_type == PT_LOAD && m->nsegments < MAX_SEGMENTS)
            m->segments[m->nsegments++] = (tf_segment){ ph->p_vaddr, ph->p_memsz, ph->p_flags };
    }
    return 0;
}

static struct module *find(struct module_list *l, const struct module_list *kl, const struct module *key)
{
    const char *path = path_of(kl, key);
    for (size_t i = 0; i < l->count; i++) {
        struct module *m = &l->items[i];
        if (m->base == key->base && m->path != NO_PATH && path && !strcmp(path_of(l, m), path))
            return m;
    }
    return NULL;
}

/* Under the recorder's lock: write the difference, make recorded = snap. */
static void apply(tf_writer *w, void *arg)
{
    struct module_list *snap = arg;
    if (snap->generation < recorded.generation)
        return;
    for (size_t i = 0; i < recorded.count; i++)
        recorded.items[i].seen = 0;
    for (size_t i = 0; i < snap->count; i++) {
        struct module *s = &snap->items[i];
        struct module *old = find(&recorded, snap, s);
        if (old) {
            old->seen = 1;
            continue;
        }
        const char *path = path_of(snap, s);
        if (!path)
            continue;
        s->id = tf_write_module_load(w, path, s->base, s->build_id, s->build_id_len,
                                     s->segments, s->nsegments);
        struct module *m = list_add(&recorded);
        size_t at = m ? list_name(&recorded, path) : NO_PATH;
        if (m && at == NO_PATH) {
            recorded.count--;           /* no memory: as if never recorded */
        } else if (m) {
            *m = *s;
            m->path = at;
            m->seen = 1;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < recorded.count; i++) {
        struct module *m = &recorded.items[i];
        if (m->seen) {
            recorded.items[kept++] = *m;
        } else {
            tf_write_module_unload(w, m->id);
            recorded.names_live -= strlen(path_of(&recorded, m)) + 1;
        }
    }
    /* Code another module puts at the unloaded one's addresses would have
     * its stacks under ids defined while the old one was loaded. */
    if (kept < recorded.count)
        rec_native_stacks_stale(w);
    recorded.count = kept;
    compact_names(&recorded);
    recorded.generation = snap->generation;
    atomic_store_explicit(&applied_generation, snap->generation, memory_order_relaxed);
}

/* One snapshot's memory is kept from rescan to rescan, mapped as large as
 * the recorded table's: mapping and faulting it in anew made each dlclose
 * 5 us slower (and a mapping made then may take an unloaded object's
 * place).  A rescan racing another uses one of its own. */
static struct module_list spare = { .lasting = 1 };
static _Atomic int spare_taken;

void modules_rescan(void)
{
    struct module_list own = { 0 };
    int reuse = !atomic_exchange_explicit(&spare_taken, 1, memory_order_acquire);
    struct module_list *snap = reuse ? &spare : &own;
    snap->count = snap->names_len = snap->names_live = 0;
    snap->generation = 0;
    fork_gate_enter();
    dl_iterate_phdr(snapshot_one, snap);
    fork_gate_leave();
    rec_define(apply, snap);
    if (reuse)
        atomic_store_explicit(&spare_taken, 0, memory_order_release);
    else
        list_free(&own);
}

static int probe_generation(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *generation = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *generation = info->dlpi_adds + info->dlpi_subs;
    return 1;   /* the first object tells it: stop there */
}

unsigned long long modules_loader_generation(void)
{
    unsigned long long generation = 0;
    fork_gate_enter();
    dl_iterate_phdr(probe_generation, &generation);
    fork_gate_leave();
    return generation;
}

void modules_rescan_if_changed(void)
{
    unsigned long long generation = modules_loader_generation();
    if (generation && generation == atomic_load_explicit(&applied_generation, memory_order_relaxed))
        return;
    modules_rescan();
}

/* Under the recorder's lock, in the child: the parent's table into the new log. */
static void restate(tf_writer *w, void *arg)
{
    (void)arg;
    for (size_t i = 0; i < recorded.count; i++) {
        struct module *m = &recorded.items[i];
        m->id = tf_write_module_load(w, path_of(&recorded, m), m->base, m->build_id, m->build_id_len,
                                     m->segments, m->nsegments);
    }
}

/*
 * The child's log starts empty, so it needs the module table again.  It is
 * the parent's, not a rescan: dl_iterate_phdr takes the loader's write lock,
 * which glibc does not reset in the child, and one of the app's own threads
 * may have held it at the fork (a C++ throw, a JIT registering code); the
 * fork gate waits only for our walkers.  A rescan here would hang a child
 * that never touches the loader.  The table is consistent (rec_fork_prepare
 * held the recorder's lock across the fork); what it can miss is an object a
 * dlopen had loaded but not yet rescanned when another thread forked: the
 * child's frames there stay unresolved until its next dlopen/dlclose.  A rare
 * gap in symbols is the price of never hanging a child.
 */
void modules_fork_child(void)
{
    rec_define(restate, NULL);
}
