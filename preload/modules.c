/*
 * modules.c - MODULE_LOAD / MODULE_UNLOAD records from dl_iterate_phdr.
 *
 * A rescan takes a snapshot outside the recorder's lock (dl_iterate_phdr
 * takes the loader's lock; we never call out under ours), then compares it
 * with the table of recorded modules under the lock.  Two rescans racing
 * apply in snapshot order: the loader's adds+subs counters only grow, and a
 * snapshot older than the one last applied is dropped.
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
#include <unistd.h>

#define MAX_SEGMENTS 16
#define MAX_BUILD_ID 64

struct module {
    char *path;
    uint64_t base;
    uint32_t id;
    int seen;                         /* present in the snapshot being applied */
    uint8_t build_id[MAX_BUILD_ID];
    uint32_t build_id_len;
    tf_segment segments[MAX_SEGMENTS];
    uint32_t nsegments;
};

struct module_list {
    struct module *items;
    size_t count, cap;
    unsigned long long generation;    /* dlpi_adds + dlpi_subs of the snapshot */
};

static struct module_list recorded;   /* under the recorder's lock */
/* recorded.generation, readable without the lock (a hint: a stale value
 * costs one rescan more). */
static _Atomic unsigned long long applied_generation;
static char exe_path[4096];

static void list_free(struct module_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i].path);
    free(l->items);
    *l = (struct module_list){ 0 };
}

static struct module *list_add(struct module_list *l)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct module *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return NULL;
        l->items = items;
        l->cap = cap;
    }
    struct module *m = &l->items[l->count++];
    memset(m, 0, sizeof *m);
    return m;
}

static const char *object_path(const char *name)
{
    if (name && *name)
        return name;
    if (!exe_path[0]) {
        ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
        exe_path[n > 0 ? n : 0] = '\0';
    }
    return exe_path;
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
    m->path = strdup(object_path(info->dlpi_name));
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

static struct module *find(struct module_list *l, const struct module *key)
{
    for (size_t i = 0; i < l->count; i++) {
        struct module *m = &l->items[i];
        if (m->base == key->base && m->path && key->path && !strcmp(m->path, key->path))
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
        struct module *old = find(&recorded, s);
        if (old) {
            old->seen = 1;
            continue;
        }
        if (!s->path)
            continue;
        s->id = tf_write_module_load(w, s->path, s->base, s->build_id, s->build_id_len,
                                     s->segments, s->nsegments);
        struct module *m = list_add(&recorded);
        if (m) {
            *m = *s;
            m->seen = 1;
            s->path = NULL;             /* moved */
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < recorded.count; i++) {
        struct module *m = &recorded.items[i];
        if (m->seen) {
            recorded.items[kept++] = *m;
        } else {
            tf_write_module_unload(w, m->id);
            free(m->path);
        }
    }
    /* Code another module puts at the unloaded one's addresses would have
     * its stacks under ids defined while the old one was loaded. */
    if (kept < recorded.count)
        rec_native_stacks_stale(w);
    recorded.count = kept;
    recorded.generation = snap->generation;
    atomic_store_explicit(&applied_generation, snap->generation, memory_order_relaxed);
}

void modules_rescan(void)
{
    struct module_list snap = { 0 };
    fork_gate_enter();
    dl_iterate_phdr(snapshot_one, &snap);
    fork_gate_leave();
    rec_define(apply, &snap);
    list_free(&snap);
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
        m->id = tf_write_module_load(w, m->path, m->base, m->build_id, m->build_id_len,
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
