/* models.c - the list of models (for --model and --help) and what they share. */
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const rp_model_ops *const rp_models[] = {
    &rp_model_cupy, &rp_model_cupy5, &rp_model_cupy_next, &rp_model_tf_bfc, &rp_model_torch, NULL,
};

const rp_model_ops *rp_model_find(const char *name)
{
    for (int i = 0; rp_models[i]; i++)
        if (!strcmp(rp_models[i]->name, name))
            return rp_models[i];
    return NULL;
}

/* A formatted message to one of the host's outlets. */
static void tell(const rp_host *h, void (*to)(void *, const char *, const char *), const char *invariant,
                 const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    to(h->ctx, invariant, msg);
}

int rp_violate(const rp_host *h, const char *invariant, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tell(h, h->violation, invariant, fmt, ap);
    va_end(ap);
    return h->audit_all ? RP_OK : RP_BROKEN;
}

int rp_warn(const rp_host *h, const char *invariant, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tell(h, h->warning, invariant, fmt, ap);
    va_end(ap);
    return RP_OK;
}

int rp_counts_check(const rp_model_counts *c, const rp_host *h)
{
    if (c->allocated + c->free_bytes != c->reserved)
        return rp_violate(h, "accounting", "allocated %llu + free %llu != reserved %llu",
                          (unsigned long long)c->allocated, (unsigned long long)c->free_bytes,
                          (unsigned long long)c->reserved);
    return RP_OK;
}

void rp_counts_stats(const rp_model_counts *c, rp_model_stats *st)
{
    memset(st, 0, sizeof *st);
    st->reserved = c->reserved;
    st->allocated = c->allocated;
    st->free_bytes = c->free_bytes;
    st->segments = c->segments;
}

void rp_note(const rp_host *h, const char *fmt, ...)
{
    if (!h->note)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    h->note(h->ctx, msg);
}

void rp_released(const rp_host *h, uint64_t base, uint64_t size)
{
    if (h->released)
        h->released(h->ctx, base, size);
}

uint64_t rp_segment(const rp_host *h, uint64_t size, int *fatal)
{
    uint64_t want = size, base = h->segment(h->ctx, &want, 0);
    if (fatal)
        *fatal = !base && !want;
    return base;
}

const char *rp_setting(const rp_settings *s, const char *const *keys)
{
    for (int i = 0; s && s->get && keys[i]; i++) {
        const char *v = s->get(s->ctx, keys[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

int rp_setting_bool(const rp_settings *s, const char *const *keys)
{
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no", "off"};
    const char *v = rp_setting(s, keys);
    for (size_t i = 0; v && i < sizeof yes / sizeof *yes; i++) {
        if (!strcasecmp(v, yes[i]))
            return 1;
        if (!strcasecmp(v, no[i]))
            return 0;
    }
    return -1;
}

uint64_t rp_setting_bytes(const rp_settings *s, const char *const *keys)
{
    const char *v = rp_setting(s, keys);
    if (!v || *v < '0' || *v > '9')
        return 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B')  /* KiB, MB: the suffix's tail */
        end += end[0] == 'i' && end[1] == 'B' ? 2 : 1;
    if (*end || (shift && n > (UINT64_MAX >> shift)))
        return 0;
    return (uint64_t)n << shift;
}
