/* models.c - the list of models (for --model and --help) and what they share. */
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
