/* model_inputs.c - the options a run used and the functions on its stacks,
 * for the pool models (model_inputs.h). */
#include "model_inputs.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define NAMED_FRAMES 64

static const tf_reader *reader_of(const rp_model_inputs *mi)
{
    return mi->src ? mi->src->reader : mi->reader;
}

/* The options the run used: --model-option first, then the log's newest
 * INFO record of that key read so far. */
static const char *setting(void *ctx, const char *key)
{
    const rp_model_inputs *mi = ctx;
    size_t n = strlen(key);
    for (int i = mi->noptions; i-- > 0;)
        if (!strncmp(mi->options[i], key, n) && mi->options[i][n] == '=')
            return mi->options[i] + n + 1;
    const tf_reader *r = reader_of(mi);
    for (uint32_t i = r ? tf_reader_info_count(r) : 0; i-- > 0;) {
        const char *k, *v;
        if (tf_reader_info(r, i, &k, &v) && k && !strcmp(k, key))
            return v;
    }
    return NULL;
}

static int stack_has(void *ctx, uint32_t id, const char *key)
{
    rp_model_inputs *mi = ctx;
    rn_stacks_use_reader(mi->stacks, reader_of(mi));  /* explore reopens the log */
    return rn_stacks_has_function(mi->stacks, id, key);
}

static uint32_t stack_functions(void *ctx, uint32_t id, const char **names, uint32_t max)
{
    rp_model_inputs *mi = ctx;
    uint64_t *at = rp_ptrmap_get(&mi->names_at, id);
    if (!at) {
        rn_stacks_use_reader(mi->stacks, reader_of(mi));
        rp_grow(&mi->names, &mi->capnames, mi->nnames + NAMED_FRAMES, sizeof *mi->names);
        /* Function names are the symboliser's: they outlive a new reader. */
        uint32_t n = rn_stacks_functions(mi->stacks, id, mi->names + mi->nnames, NAMED_FRAMES);
        rp_ptrmap_put(&mi->names_at, id, (uint64_t)mi->nnames << 8 | n);
        mi->nnames += n;
        at = rp_ptrmap_get(&mi->names_at, id);
    }
    uint32_t n = (uint32_t)(*at & 0xff), first = (uint32_t)(*at >> 8);
    if (n > max)
        n = max;
    memcpy(names, mi->names + first, n * sizeof *names);
    return n;
}

void rp_model_inputs_init(rp_model_inputs *mi, rn_stacks *stacks, rp_source *src, const tf_reader *reader,
                          const char *const *options, int noptions)
{
    memset(mi, 0, sizeof *mi);
    mi->stacks = stacks;
    mi->src = src;
    mi->reader = reader;
    mi->options = options;
    mi->noptions = noptions;
    rp_ptrmap_init(&mi->names_at);
}

void rp_model_inputs_free(rp_model_inputs *mi)
{
    rp_ptrmap_free(&mi->names_at);
    free(mi->names);
    mi->names = NULL;
}

void rp_model_inputs_attach(rp_model_inputs *mi, rp_options *o)
{
    o->setting = setting;
    o->setting_ctx = mi;
    o->stack_has = stack_has;
    o->stack_functions = stack_functions;
    o->stack_ctx = mi;
}
