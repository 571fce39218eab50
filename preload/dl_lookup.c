/*
 * dl_lookup.c - a loaded object's symbols from its own hash tables (see
 * dl_lookup.h).  The walks go through dl_iterate_phdr, which holds the
 * loader's lock for its callback, so an object cannot be unloaded while its
 * tables are read; each walk is a fork gate's walker (fork_gate.h).
 */
#include "dl_lookup.h"
#include "fork_gate.h"

#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tables {
    uintptr_t base;
    const ElfW(Dyn) *dyn;
    const ElfW(Sym) *symtab;
    const char *strtab;
    const uint32_t *gnu_hash;
    const uint32_t *sysv_hash;
    const ElfW(Half) *versym;
    const char *soname;
};

/* glibc relocates the dynamic section's addresses in place on most
 * targets; where it does not (the vDSO, read-only sections), they are still
 * offsets from the load address (dl_search.c reads DT_STRTAB the same way). */
static const void *address(uintptr_t base, ElfW(Addr) ptr)
{
    return (const void *)(ptr < base ? ptr + base : ptr);
}

static int read_tables(uintptr_t base, const ElfW(Dyn) *dyn, struct tables *t)
{
    *t = (struct tables){ .base = base, .dyn = dyn };
    ElfW(Xword) soname = 0;
    int has_soname = 0;
    for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: t->symtab = address(base, d->d_un.d_ptr); break;
        case DT_STRTAB: t->strtab = address(base, d->d_un.d_ptr); break;
        case DT_GNU_HASH: t->gnu_hash = address(base, d->d_un.d_ptr); break;
        case DT_HASH: t->sysv_hash = address(base, d->d_un.d_ptr); break;
        case DT_VERSYM: t->versym = address(base, d->d_un.d_ptr); break;
        case DT_SONAME: soname = d->d_un.d_val, has_soname = 1; break;
        default: break;
        }
    }
    if (t->strtab && has_soname)
        t->soname = t->strtab + soname;
    return t->symtab && t->strtab && (t->gnu_hash || t->sysv_hash);
}

static const ElfW(Dyn) *dynamic_of(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return NULL;
}

/* What glibc's dlsym takes for a name asked without a version: a symbol of
 * no version (or the base one) at once; else the one visible versioned
 * definition, when there is exactly one (check_match in dl-lookup.c). */
struct match {
    const char *name;
    const ElfW(Sym) *versioned;
    int versions;
};

static const ElfW(Sym) *check(const struct tables *t, uint32_t i, struct match *m)
{
    const ElfW(Sym) *s = &t->symtab[i];
    unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
    if (s->st_shndx == SHN_UNDEF || (s->st_value == 0 && s->st_shndx != SHN_ABS))
        return NULL;
    if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE && type != STT_COMMON)
        return NULL;            /* TLS, and IFUNC (a resolver to call) */
    if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)
        return NULL;
    if (strcmp(t->strtab + s->st_name, m->name) != 0)
        return NULL;
    if (t->versym && (t->versym[i] & 0x7fff) >= 2) {
        if (!(t->versym[i] & 0x8000) && m->versions++ == 0)
            m->versioned = s;
        return NULL;
    }
    return s;
}

static uint32_t gnu_hash(const char *name)
{
    uint32_t h = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = h * 33 + *c;
    return h;
}

static uint32_t sysv_hash(const char *name)
{
    uint32_t h = 0;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        h = (h << 4) + *c;
        uint32_t g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

static const ElfW(Sym) *search_gnu(const struct tables *t, struct match *m)
{
    const uint32_t *h = t->gnu_hash;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], bloom_shift = h[3];
    if (!nbuckets || !bloom_size)
        return NULL;
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t hash = gnu_hash(m->name);
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(hash / bits) % bloom_size];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (hash % bits)) | ((ElfW(Addr))1 << ((hash >> bloom_shift) % bits));
    if ((word & mask) != mask)
        return NULL;
    uint32_t i = buckets[hash % nbuckets];
    if (i < symoffset)
        return NULL;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((h2 | 1) == (hash | 1)) {
            const ElfW(Sym) *s = check(t, i, m);
            if (s)
                return s;
        }
        if (h2 & 1)
            return NULL;
    }
}

static const ElfW(Sym) *search_sysv(const struct tables *t, struct match *m)
{
    const uint32_t *h = t->sysv_hash;
    uint32_t nbuckets = h[0], nchain = h[1];
    if (!nbuckets)
        return NULL;
    const uint32_t *buckets = h + 2, *chain = buckets + nbuckets;
    for (uint32_t i = buckets[sysv_hash(m->name) % nbuckets]; i && i < nchain; i = chain[i]) {
        const ElfW(Sym) *s = check(t, i, m);
        if (s)
            return s;
    }
    return NULL;
}

static void *find(const struct tables *t, const char *name)
{
    struct match m = { .name = name };
    const ElfW(Sym) *s = t->gnu_hash ? search_gnu(t, &m) : search_sysv(t, &m);
    if (!s && m.versions == 1)
        s = m.versioned;
    if (!s)
        return NULL;
    return (void *)(s->st_shndx == SHN_ABS ? s->st_value : t->base + s->st_value);
}

static void *find_in(uintptr_t base, const ElfW(Dyn) *dyn, const char *name)
{
    struct tables t;
    return dyn && read_tables(base, dyn, &t) ? find(&t, name) : NULL;
}

static int walk(int (*visit)(struct dl_phdr_info *, size_t, void *), void *arg)
{
    fork_gate_enter();
    int r = dl_iterate_phdr(visit, arg);
    fork_gate_leave();
    return r;
}

/* ------------------------------------------------ objects, by name or address */

static const char *last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether the loader would take the loaded object for `object`: its path,
 * or for a bare name its soname or its file's name. */
static int named(const struct dl_phdr_info *info, const ElfW(Dyn) *dyn, const char *object)
{
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    if (!strcmp(path, object))
        return 1;
    if (strchr(object, '/'))
        return 0;
    if (path[0] && !strcmp(last_component(path), object))
        return 1;
    struct tables t;
    read_tables(info->dlpi_addr, dyn, &t);
    return t.soname && !strcmp(t.soname, object);
}

struct object_query {
    const char *object;     /* by name, or */
    uintptr_t addr;         /* by an address inside it */
    const char *name;       /* the symbol, or NULL to find the object only */
    uintptr_t base;
    const ElfW(Dyn) *dyn;
    void *found;
};

static int holds(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr - start < ph->p_memsz)
            return 1;
    }
    return 0;
}

static int visit_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct object_query *q = arg;
    const ElfW(Dyn) *dyn = dynamic_of(info);
    if (!dyn || (q->object ? !named(info, dyn, q->object) : !holds(info, q->addr)))
        return 0;
    q->base = info->dlpi_addr;
    q->dyn = dyn;
    if (q->name)
        q->found = find_in(info->dlpi_addr, dyn, q->name);
    return 1;
}

void *dl_lookup_in_loaded(const char *object, const char *name)
{
    struct object_query q = { .object = object, .name = name };
    if (!object || !name)
        return NULL;
    walk(visit_object, &q);
    return q.found;
}

int dl_lookup_loaded(const char *object)
{
    struct object_query q = { .object = object };
    return object && walk(visit_object, &q);
}

void *dl_lookup_in_object_at(const void *addr, const char *name)
{
    struct object_query q = { .addr = (uintptr_t)addr, .name = name };
    if (!addr || !name)
        return NULL;
    walk(visit_object, &q);
    return q.found;
}

/* ------------------------------------------------------------ scopes */

/* glibc's search list for a handle: the object, then its DT_NEEDED
 * dependencies breadth first, each once. */
#define SCOPE_MAX 64      /* 1 KiB of stack; a deeper definition is found by the next searches */

struct scope_entry {
    uintptr_t base;
    const ElfW(Dyn) *dyn;
};

struct scope_query {
    const struct link_map *map;
    const char *name;
    void *found;
};

/* The whole search runs in the first call of one walk's callback, so that
 * the loader's lock (recursive: the walks for dependencies nest) keeps
 * every object it reads loaded; the handle's object is the caller's. */
static int visit_scope(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info, (void)size;
    struct scope_query *sq = arg;
    struct scope_entry scope[SCOPE_MAX];
    int n = 0;
    scope[n++] = (struct scope_entry){ sq->map->l_addr, sq->map->l_ld };
    for (int i = 0; i < n; i++) {
        struct tables t;
        if (!scope[i].dyn || !read_tables(scope[i].base, scope[i].dyn, &t))
            continue;
        sq->found = find(&t, sq->name);
        if (sq->found)
            return 1;
        for (const ElfW(Dyn) *d = t.dyn; d->d_tag != DT_NULL && n < SCOPE_MAX; d++) {
            if (d->d_tag != DT_NEEDED)
                continue;
            struct object_query q = { .object = t.strtab + d->d_un.d_val };
            if (!dl_iterate_phdr(visit_object, &q))
                continue;
            int seen = 0;
            for (int j = 0; j < n && !seen; j++)
                seen = scope[j].base == q.base && scope[j].dyn == q.dyn;
            if (!seen)
                scope[n++] = (struct scope_entry){ q.base, q.dyn };
        }
    }
    return 1;
}

void *dl_lookup_in_scope(const void *handle, const char *name)
{
    struct scope_query sq = { .map = handle, .name = name };
    if (handle && name)
        walk(visit_scope, &sq);
    return sq.found;
}

struct order_query {
    const char *name;
    int after_self;         /* only objects after libtrace.so's; else all but it */
    int self_seen;
    void *found;
};

static int visit_in_order(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct order_query *q = arg;
    if (!q->self_seen && holds(info, (uintptr_t)&visit_in_order)) {
        q->self_seen = 1;
        return 0;
    }
    if (q->after_self && !q->self_seen)
        return 0;
    q->found = find_in(info->dlpi_addr, dynamic_of(info), q->name);
    return q->found != NULL;
}

void *dl_lookup_next(const char *name)
{
    struct order_query q = { .name = name, .after_self = 1 };
    if (name)
        walk(visit_in_order, &q);
    return q.found;
}

void *dl_lookup_any(const char *name)
{
    struct order_query q = { .name = name };
    if (name)
        walk(visit_in_order, &q);
    return q.found;
}
