/* models.c - the list of models, for --model and --help. */
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

int rp_violate(const rp_host *h, const char *invariant, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    h->violation(h->ctx, invariant, msg);
    return RP_BROKEN;
}

int rp_warn(const rp_host *h, const char *invariant, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    h->warning(h->ctx, invariant, msg);
    return RP_OK;
}
