/* state.c - the replay's state as bytes (state.h). */
#include "state.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xalloc.h"

static const char magic[8] = {'r', 'p', '-', 's', 't', 'a', 't', 'e'};

void rp_state_w_free(rp_state_w *w)
{
    free(w->buf);
    *w = (rp_state_w){0};
}

void rp_state_put(rp_state_w *w, const void *p, size_t n)
{
    if (!n)
        return;
    rp_grow(&w->buf, &w->cap, w->len + n, 1);
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

void rp_state_u64(rp_state_w *w, uint64_t v) { rp_state_put(w, &v, sizeof v); }

void rp_state_array(rp_state_w *w, const void *p, size_t n, size_t size)
{
    rp_state_u64(w, n);
    rp_state_put(w, p, n * size);
}

void rp_state_str(rp_state_w *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    rp_state_array(w, s, n, 1);
}

int rp_state_get(rp_state_r *r, void *p, size_t n)
{
    if (!n)   /* p may be NULL then (an empty array) */
        return r->bad ? -1 : 0;
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        memset(p, 0, n);
        return -1;
    }
    memcpy(p, r->p, n);
    r->p += n;
    return 0;
}

uint64_t rp_state_get_u64(rp_state_r *r)
{
    uint64_t v;
    rp_state_get(r, &v, sizeof v);
    return v;
}

void *rp_state_get_array(rp_state_r *r, size_t *n, size_t size)
{
    uint64_t count = rp_state_get_u64(r);
    *n = 0;
    if (r->bad || !count)
        return NULL;
    if (count > (uint64_t)(r->end - r->p) / size) {
        r->bad = 1;
        return NULL;
    }
    void *p = rp_xmalloc((size_t)count * size);
    rp_state_get(r, p, (size_t)count * size);
    *n = (size_t)count;
    return p;
}

void rp_state_get_str(rp_state_r *r, char *out, size_t cap)
{
    uint64_t n = rp_state_get_u64(r);
    out[0] = '\0';
    if (r->bad)
        return;
    if (n >= cap || n > (uint64_t)(r->end - r->p)) {
        r->bad = 1;
        return;
    }
    rp_state_get(r, out, (size_t)n);
    out[n] = '\0';
}

/* ------------------------------------------------------------ containers */

void rp_state_ptrmap(rp_state_w *w, const rp_ptrmap *m)
{
    rp_state_put(w, m, sizeof *m);
    rp_state_put(w, m->slots, m->cap * sizeof *m->slots);
}

void rp_state_get_ptrmap(rp_state_r *r, rp_ptrmap *m)
{
    rp_ptrmap_free(m);
    rp_ptrmap saved;
    rp_state_get(r, &saved, sizeof saved);
    /* The capacity is a power of two (the probe masks with cap - 1). */
    if (saved.cap & (saved.cap - 1) || saved.cap > (size_t)(r->end - r->p) / sizeof *m->slots)
        r->bad = 1;
    if (r->bad) {
        rp_ptrmap_init(m);
        return;
    }
    *m = saved;
    m->slots = saved.cap ? rp_xmalloc(saved.cap * sizeof *m->slots) : NULL;
    rp_state_get(r, m->slots, saved.cap * sizeof *m->slots);
}

void rp_state_rangeset(rp_state_w *w, const rp_rangeset *s)
{
    rp_state_put(w, s, sizeof *s);
    rp_state_put(w, s->slot, (size_t)s->nchunks * RP_RANGESET_CHUNK * sizeof *s->slot);
    rp_state_put(w, s->key, (size_t)s->nchunks * RP_RANGESET_CHUNK * sizeof *s->key);
    rp_state_put(w, s->count, (size_t)s->nchunks * sizeof *s->count);
    rp_state_put(w, s->order, (size_t)s->nord * sizeof *s->order);
    rp_state_put(w, s->lo, (size_t)s->nord * sizeof *s->lo);
    rp_state_put(w, s->spare, (size_t)s->nspare * sizeof *s->spare);
    /* The positions table: the same slots, so it holds for the copy. */
    rp_state_put(w, s->hint, s->hint ? ((size_t)1 << s->hintbits) * sizeof *s->hint : 0);
}

/* n bytes of the buffer into a new allocation (NULL for none). */
static void *take(rp_state_r *r, size_t n)
{
    if (!n || r->bad)
        return NULL;
    if ((size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return NULL;
    }
    void *p = rp_xmalloc(n);
    rp_state_get(r, p, n);
    return p;
}

void rp_state_get_rangeset(rp_state_r *r, rp_rangeset *s)
{
    rp_rangeset_free(s);
    rp_rangeset saved;
    if (rp_state_get(r, &saved, sizeof saved) < 0 || saved.nord > saved.nchunks ||
        saved.nspare > saved.nchunks) {
        r->bad = 1;
        rp_rangeset_init(s);
        return;
    }
    size_t slots = (size_t)saved.nchunks * RP_RANGESET_CHUNK;
    /* Capacities as copy leaves them: exactly what is in use. */
    *s = saved;
    s->capchunks = s->nchunks;
    s->capord = s->nord;
    s->capspare = s->nspare;
    s->slot = take(r, slots * sizeof *s->slot);
    s->key = take(r, slots * sizeof *s->key);
    s->count = take(r, (size_t)saved.nchunks * sizeof *s->count);
    s->order = take(r, (size_t)saved.nord * sizeof *s->order);
    s->lo = take(r, (size_t)saved.nord * sizeof *s->lo);
    s->spare = take(r, (size_t)saved.nspare * sizeof *s->spare);
    if (saved.hint && saved.hintbits >= 32)
        r->bad = 1;
    s->hint = saved.hint && !r->bad ? take(r, ((size_t)1 << saved.hintbits) * sizeof *s->hint) : NULL;
    if (!s->hint)
        s->hintbits = 0;
    if (r->bad)
        rp_rangeset_free(s);
}

/* ---------------------------------------------------------------- points */

void rp_state_point(rp_state_w *w, const char *point)
{
    for (uint64_t i = 0; point && rp_models[i]; i++)
        for (uint64_t j = 0; rp_models[i]->point_names && rp_models[i]->point_names[j]; j++)
            if (rp_models[i]->point_names[j] == point) {
                rp_state_u64(w, i + 1);
                rp_state_u64(w, j);
                return;
            }
    /* NULL, or a name of no table (then by its text). */
    rp_state_u64(w, 0);
    rp_state_str(w, point);
}

const char *rp_state_get_point(rp_state_r *r)
{
    uint64_t i = rp_state_get_u64(r);
    if (i) {
        uint64_t j = rp_state_get_u64(r), n = 0;
        for (; rp_models[n]; n++)
            ;
        if (r->bad || i > n || !rp_models[i - 1]->point_names)
            return NULL;
        for (uint64_t k = 0; k <= j; k++)
            if (!rp_models[i - 1]->point_names[k])
                return NULL;
        return rp_models[i - 1]->point_names[j];
    }
    char text[256];
    rp_state_get_str(r, text, sizeof text);
    if (r->bad || !text[0])
        return NULL;
    for (size_t m = 0; rp_models[m]; m++)
        for (size_t k = 0; rp_models[m]->point_names && rp_models[m]->point_names[k]; k++)
            if (!strcmp(rp_models[m]->point_names[k], text))
                return rp_models[m]->point_names[k];
    return "(a re-entrancy point of another build)";
}

/* -------------------------------------------------------------- envelope */

/* FNV-1a, 64 bits: a checksum against damage, not against forgery. */
static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static char identity[160];

/* The main program's NT_GNU_BUILD_ID note. */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (desc + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                size_t at = (size_t)snprintf(identity, sizeof identity, "build-id ");
                for (uint32_t k = 0; k < nh->n_descsz && at + 3 < sizeof identity; k++)
                    at += (size_t)snprintf(identity + at, sizeof identity - at, "%02x", desc[k]);
                return 1;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 1;   /* the first object is the main program: look no further */
}

const char *rp_state_identity(void)
{
    if (identity[0])
        return identity;
    dl_iterate_phdr(find_build_id, NULL);
    if (identity[0])
        return identity;
    /* Linked without a build-id: the executable's bytes name the build. */
    uint64_t h = 0xcbf29ce484222325ULL;
    FILE *f = fopen("/proc/self/exe", "rb");
    uint8_t buf[65536];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0)
        h = (h ^ fnv1a(buf, n)) * 0x100000001b3ULL;
    if (f)
        fclose(f);
    snprintf(identity, sizeof identity, "exe-hash %016llx", (unsigned long long)h);
    return identity;
}

void rp_state_seal(const rp_state_w *payload, rp_state_w *out)
{
    uint32_t version = RP_STATE_VERSION;
    rp_state_put(out, magic, sizeof magic);
    rp_state_put(out, &version, sizeof version);
    rp_state_str(out, rp_state_identity());
    rp_state_u64(out, payload->len);
    rp_state_u64(out, fnv1a(payload->buf, payload->len));
    rp_state_put(out, payload->buf, payload->len);
}

int rp_state_open(const void *buf, size_t len, rp_state_r *r, char *err, size_t errlen)
{
    rp_state_r in = {buf, (const uint8_t *)buf + len, 0};
    char m[sizeof magic], who[160];
    uint32_t version;
    rp_state_get(&in, m, sizeof m);
    rp_state_get(&in, &version, sizeof version);
    if (in.bad || memcmp(m, magic, sizeof magic)) {
        snprintf(err, errlen, "not a replay state");
        return -1;
    }
    if (version != RP_STATE_VERSION) {
        snprintf(err, errlen, "a replay state of version %u (this trace-replay reads %u)", version,
                 RP_STATE_VERSION);
        return -1;
    }
    rp_state_get_str(&in, who, sizeof who);
    if (!in.bad && strcmp(who, rp_state_identity())) {
        snprintf(err, errlen, "written by another build of trace-replay (%s; this one is %s)", who,
                 rp_state_identity());
        return -1;
    }
    uint64_t n = rp_state_get_u64(&in), sum = rp_state_get_u64(&in);
    if (in.bad || n != (uint64_t)(in.end - in.p)) {
        snprintf(err, errlen, "the replay state is cut short");
        return -1;
    }
    if (fnv1a(in.p, (size_t)n) != sum) {
        snprintf(err, errlen, "the replay state is damaged (checksum)");
        return -1;
    }
    *r = in;
    return 0;
}
