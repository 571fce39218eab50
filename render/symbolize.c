/*
 * symbolize.c - offline symbolisation with libdwfl.
 *
 * Each module becomes its own Dwfl session holding one ELF file reported at
 * bias 0, so lookups use the ELF virtual address (ip - the recorded bias)
 * and one module's file never shadows another's.
 */
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize.h"

typedef struct sym_module {
    uint8_t *build_id;      /* the recorded build-id and path: the cache key */
    uint32_t build_id_len;
    char *path;
    char *binary;           /* the file found; NULL when none was */
    char *differs;          /* when none was: the first ELF file met at a
                             * place searched whose build-id (or segments)
                             * differ from the recorded ones; else NULL */
    Dwfl *dwfl;
} sym_module;

/* A C++ symbol's readable name, by the symbol's own string (libdw's, which
 * stays put while its module is open). */
typedef struct sym_name { const char *mangled; char *readable; } sym_name;

struct sym_ctx {
    sym_name *names;        /* open addressing; readable NULL: keep the symbol */
    size_t names_used, names_cap;
    char **dirs;
    int ndirs;
    char *debuginfo_path;   /* for separate debug files of stripped binaries */
    Dwfl_Callbacks callbacks;
    sym_module *mods;
    size_t nmods, capmods;
    size_t last;            /* the entry used last: stacks stay in few modules */
};

static char *hex(const uint8_t *b, uint32_t n)
{
    char *s = malloc(2 * (size_t)n + 1);
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        sprintf(s + 2 * i, "%02x", b[i]);
    s[2 * n] = '\0';
    return s;
}

static char *join_search_path(const char *const *dirs, int n)
{
    size_t len = sizeof ":.debug:/usr/lib/debug";
    for (int i = 0; i < n; i++)
        len += strlen(dirs[i]) + 1;
    char *path = malloc(len);
    if (!path)
        return NULL;
    strcpy(path, ":.debug:/usr/lib/debug");
    for (int i = 0; i < n; i++)
        strcat(strcat(path, ":"), dirs[i]);
    return path;
}

sym_ctx *sym_new(const char *const *debug_dirs, int n)
{
    sym_ctx *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->dirs = calloc((size_t)n + 1, sizeof *s->dirs);
    s->debuginfo_path = join_search_path(debug_dirs, n);
    if (!s->dirs || !s->debuginfo_path) {
        sym_free(s);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if ((s->dirs[s->ndirs] = strdup(debug_dirs[i])))
            s->ndirs++;
    s->callbacks.find_elf = dwfl_build_id_find_elf;
    s->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    s->callbacks.debuginfo_path = &s->debuginfo_path;
    return s;
}

void sym_free(sym_ctx *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++) {
        free(s->mods[i].build_id);
        free(s->mods[i].path);
        free(s->mods[i].binary);
        free(s->mods[i].differs);
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
    }
    free(s->mods);
    for (size_t i = 0; i < s->names_cap; i++)
        free(s->names[i].readable);
    free(s->names);
    for (int i = 0; i < s->ndirs; i++)
        free(s->dirs[i]);
    free(s->dirs);
    free(s->debuginfo_path);
    free(s);
}

/* The segments of a module `trace-replay import` made up from frames that
 * named a path and an offset (replay/import_json.c): one R+X range of whole
 * pages, which says nothing of the binary's own. */
static int made_up_segments(const tf_module *m)
{
    return m->nsegments == 1 && m->segments[0].flags == 5 && m->segments[0].vaddr % 4096 == 0 &&
           m->segments[0].memsz % 4096 == 0;
}

/* 1 when the ELF file's PT_LOAD segments are the recorded ones (vaddr, size
 * in memory, flags, in order; a separate debug file keeps them too). */
static int segments_match(Elf *elf, const tf_module *m)
{
    if (made_up_segments(m))
        return 1;
    size_t nph;
    if (elf_getphdrnum(elf, &nph) != 0)
        return 0;
    uint32_t k = 0;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph))
            return 0;
        if (ph.p_type != PT_LOAD)
            continue;
        if (k >= m->nsegments)
            return m->nsegments >= 16;  /* the recorder keeps 16 at most */
        const tf_segment *g = &m->segments[k++];
        if (g->vaddr != ph.p_vaddr || g->memsz != ph.p_memsz || g->flags != ph.p_flags)
            return 0;
    }
    return k == m->nsegments;
}

/* 1 when path is an ELF file whose build-id is the wanted one.  A module
 * recorded without a build-id (linked with --build-id=none) is matched by
 * its PT_LOAD segments instead: the file at its path may have been rebuilt
 * since, and its symbols read as the old binary's would name the wrong
 * functions and lines. */
static int build_id_matches(const char *path, const tf_module *m, int *is_elf)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    *is_elf = 0;
    if (fd < 0)
        return 0;
    int ok = 0;
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf && elf_kind(elf) == ELF_K_ELF) {
        *is_elf = 1;
        const void *id;
        ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
        if (m->build_id_len)
            ok = n == (ssize_t)m->build_id_len && memcmp(id, m->build_id, (size_t)n) == 0;
        else
            ok = !m->nsegments || segments_match(elf, m);
    }
    elf_end(elf);
    close(fd);
    return ok;
}

static Dwfl *open_session(sym_ctx *s, const char *path)
{
    Dwfl *dwfl = dwfl_begin(&s->callbacks);
    if (!dwfl)
        return NULL;
    dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_elf(dwfl, path, path, -1, 0, false);
    dwfl_report_end(dwfl, NULL, NULL);
    if (!mod) {
        dwfl_end(dwfl);
        return NULL;
    }
    return dwfl;
}

/* Tries one candidate file; on success fills mod. */
static int try_candidate(sym_ctx *s, sym_module *mod, const char *path, const tf_module *m)
{
    int is_elf;
    if (!build_id_matches(path, m, &is_elf)) {
        if (is_elf && !mod->differs)
            mod->differs = strdup(path);
        return 0;
    }
    Dwfl *dwfl = open_session(s, path);
    if (!dwfl)
        return 0;
    mod->binary = strdup(path);
    if (!mod->binary) {
        dwfl_end(dwfl);
        return 0;
    }
    mod->dwfl = dwfl;
    return 1;
}

static int try_build_id_dir(sym_ctx *s, sym_module *mod, const char *dir, const char *id,
                            const tf_module *m)
{
    char path[4096];
    if (!id || strlen(id) < 4)
        return 0;
    snprintf(path, sizeof path, "%s/.build-id/%.2s/%s.debug", dir, id, id + 2);
    if (try_candidate(s, mod, path, m))
        return 1;
    snprintf(path, sizeof path, "%s/.build-id/%.2s/%s", dir, id, id + 2);
    return try_candidate(s, mod, path, m);
}

static void find_file(sym_ctx *s, sym_module *mod, const tf_module *m, const char *id)
{
    const char *path = m->path ? m->path : "";
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char cand[4096];
    for (int i = 0; i < s->ndirs; i++) {
        if (try_build_id_dir(s, mod, s->dirs[i], id, m))
            return;
        snprintf(cand, sizeof cand, "%s/%s", s->dirs[i], base);
        if (*base && try_candidate(s, mod, cand, m))
            return;
    }
    if (try_build_id_dir(s, mod, "/usr/lib/debug", id, m))
        return;
    if (*path)
        try_candidate(s, mod, path, m);
}

static int same_module(const sym_module *mod, const tf_module *m, const char *path)
{
    return mod->build_id_len == m->build_id_len &&
           memcmp(mod->build_id, m->build_id, m->build_id_len) == 0 &&
           strcmp(mod->path, path) == 0;
}

static sym_module *add_module(sym_ctx *s, const tf_module *m, const char *path)
{
    if (s->nmods == s->capmods) {
        size_t cap = s->capmods ? s->capmods * 2 : 16;
        sym_module *mods = realloc(s->mods, cap * sizeof *mods);
        if (!mods)
            return NULL;
        s->mods = mods;
        s->capmods = cap;
    }
    sym_module mod = {
        .build_id = malloc(m->build_id_len + 1),
        .build_id_len = m->build_id_len,
        .path = strdup(path),
    };
    char *id = hex(m->build_id, m->build_id_len);
    if (!mod.build_id || !mod.path || !id) {
        free(mod.build_id);
        free(mod.path);
        free(id);
        return NULL;
    }
    memcpy(mod.build_id, m->build_id, m->build_id_len);
    find_file(s, &mod, m, m->build_id_len ? id : NULL);
    free(id);
    if (mod.binary) {
        free(mod.differs);
        mod.differs = NULL;
    }
    s->mods[s->nmods] = mod;
    return &s->mods[s->nmods++];
}

/* The cache entry of a module, made (and its file searched for) on first use. */
static sym_module *module_entry(sym_ctx *s, const tf_module *m)
{
    const char *path = m->path ? m->path : "";
    if (s->last < s->nmods && same_module(&s->mods[s->last], m, path))
        return &s->mods[s->last];
    for (size_t i = 0; i < s->nmods; i++)
        if (same_module(&s->mods[i], m, path)) {
            s->last = i;
            return &s->mods[i];
        }
    sym_module *mod = add_module(s, m, path);
    if (mod)
        s->last = (size_t)(mod - s->mods);
    return mod;
}

/* dwfl_module_getsrc finds the compile unit through .debug_aranges, which
 * clang does not emit by default: then ask each unit whether it covers addr. */
static void line_by_cu_scan(Dwfl_Module *dm, Dwarf_Addr addr, sym_info *out)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = NULL;
    while ((cu = dwfl_module_nextcu(dm, cu, &bias)) != NULL) {
        if (dwarf_haspc(cu, addr - bias) != 1)
            continue;
        Dwarf_Line *line = dwarf_getsrc_die(cu, addr - bias);
        int lineno = 0;
        if (line && dwarf_lineno(line, &lineno) == 0) {
            out->file = dwarf_linesrc(line, NULL, NULL);
            out->line = out->file ? lineno : 0;
        }
        return;
    }
}

/* C++ names as their author wrote them (`c10::cuda::...::malloc(...)`, not
 * `_ZN3c104cuda...`): __cxa_demangle, looked up at run time in libstdc++ so
 * that the tools need no C++ runtime to start; without one, or for a name it
 * does not take, the symbol is shown as it is. */
typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static demangle_fn demangler(void)
{
    static int looked;
    static demangle_fn fn;
    if (!looked) {
        looked = 1;
        void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (lib)
            *(void **)&fn = dlsym(lib, "__cxa_demangle");
    }
    return fn;
}

static size_t name_slot(const sym_ctx *s, const char *mangled)
{
    size_t i = ((uintptr_t)mangled >> 3) * 0x9E3779B97F4A7C15ull & (s->names_cap - 1);
    while (s->names[i].mangled && s->names[i].mangled != mangled)
        i = (i + 1) & (s->names_cap - 1);
    return i;
}

static const char *readable_name(sym_ctx *s, const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return name;
    if (2 * (s->names_used + 1) > s->names_cap) {
        size_t cap = s->names_cap ? 2 * s->names_cap : 256;
        sym_name *old = s->names, *grown = calloc(cap, sizeof *grown);
        if (!grown)
            return name;
        size_t old_cap = s->names_cap;
        s->names = grown;
        s->names_cap = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].mangled)
                s->names[name_slot(s, old[i].mangled)] = old[i];
        free(old);
    }
    sym_name *e = &s->names[name_slot(s, name)];
    if (!e->mangled) {
        demangle_fn fn = demangler();
        int status = -1;
        char *text = fn ? fn(name, NULL, NULL, &status) : NULL;
        if (status != 0) {
            free(text);
            text = NULL;
        }
        *e = (sym_name){ .mangled = name, .readable = text };
        s->names_used++;
    }
    return e->readable ? e->readable : name;
}

/* The innermost inlined subroutine under die whose ranges hold pc (CU
 * relative), NULL when none.  A walk of our own: dwarf_getscopes gives up
 * on link-time-optimised units, whose inlined code names its origin in
 * another unit. */
static Dwarf_Die *inlined_under(Dwarf_Die *die, Dwarf_Addr pc, Dwarf_Die *found, int depth)
{
    Dwarf_Die child;
    if (depth > 64 || dwarf_child(die, &child) != 0)
        return NULL;
    do {
        int tag = dwarf_tag(&child);
        int scope = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block;
        int holder = tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                     tag == DW_TAG_union_type || tag == DW_TAG_module;
        if (holder) {
            Dwarf_Die *in = inlined_under(&child, pc, found, depth + 1);
            if (in)
                return in;
        } else if (scope && dwarf_haspc(&child, pc) == 1) {
            /* The scope holding pc: the answer is in it or nowhere. */
            Dwarf_Die *in = inlined_under(&child, pc, found, depth + 1);
            if (in)
                return in;
            if (tag != DW_TAG_inlined_subroutine)
                return NULL;
            *found = child;
            return found;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return NULL;
}

/* The innermost function inlined where addr is: its name, as the line
 * table's file and line (which are that code's) go with, NULL when addr is
 * in no inlined code or no DWARF says. */
static const char *inlined_at(sym_ctx *s, Dwfl_Module *dm, Dwarf_Addr addr)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(dm, addr, &bias), found;
    if (!cu) {  /* no .debug_aranges (clang): the unit that holds addr */
        while ((cu = dwfl_module_nextcu(dm, cu, &bias)) != NULL && dwarf_haspc(cu, addr - bias) != 1)
            ;
        if (!cu)
            return NULL;
    }
    Dwarf_Die *in = inlined_under(cu, addr - bias, &found, 0);
    if (!in)
        return NULL;
    Dwarf_Attribute at;
    const char *name = dwarf_formstring(dwarf_attr_integrate(in, DW_AT_linkage_name, &at));
    if (!name)
        name = dwarf_formstring(dwarf_attr_integrate(in, DW_AT_name, &at));
    return readable_name(s, name ? name : "?");
}

const char *sym_function(sym_ctx *s, const tf_module *m, uint64_t ip)
{
    sym_module *mod = m ? module_entry(s, m) : NULL;
    if (!mod || !mod->dwfl)
        return NULL;
    Dwarf_Addr addr = ip - m->base;
    Dwfl_Module *dm = dwfl_addrmodule(mod->dwfl, addr);
    return dm ? readable_name(s, dwfl_module_addrname(dm, addr)) : NULL;
}

int sym_lookup(sym_ctx *s, const tf_module *m, uint64_t ip, sym_info *out)
{
    memset(out, 0, sizeof *out);
    sym_module *mod = m ? module_entry(s, m) : NULL;
    if (!mod || !mod->dwfl)
        return 0;
    out->binary = mod->binary;
    Dwarf_Addr addr = ip - m->base;
    Dwfl_Module *dm = dwfl_addrmodule(mod->dwfl, addr);
    if (!dm)
        return 0;
    out->function = readable_name(s, dwfl_module_addrname(dm, addr));
    out->inlined = inlined_at(s, dm, addr);
    Dwfl_Line *line = dwfl_module_getsrc(dm, addr);
    if (line) {
        int lineno = 0;
        out->file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        out->line = out->file ? lineno : 0;
    } else {
        line_by_cu_scan(dm, addr, out);
    }
    return out->function != NULL || out->file != NULL;
}

const char *sym_module_differs(sym_ctx *s, const tf_module *m)
{
    sym_module *mod = s && m ? module_entry(s, m) : NULL;
    return mod && !mod->binary ? mod->differs : NULL;
}
