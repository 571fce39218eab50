/*
 * model_inputs.h - what the pool models ask of a command besides the log's
 * events: the options the run used, and the functions on a stack.
 *
 * check, stats, explore, minimize and report replay the same way through
 * these, so report's "Pool models" section and check reach the same verdict
 * on the same log: a collection is placed by the same stack, a model learns
 * the same options.
 */
#ifndef RP_MODEL_INPUTS_H
#define RP_MODEL_INPUTS_H

#include "ptrmap.h"
#include "replay.h"
#include "source.h"
#include "stacks.h"

typedef struct rp_model_inputs {
    rn_stacks *stacks;
    /* Where the log is read from: src when set (explore and minimize open
     * the log again, and its reader changes), else reader. */
    rp_source *src;
    const tf_reader *reader;
    const char *const *options;      /* --model-option KEY=VALUE, later ones win */
    int noptions;
    /* Function names of the stacks asked for, each once: a replay places
     * collections again and again (minimize replays the log many times). */
    rp_ptrmap names_at;              /* stack id -> first << 8 | count */
    const char **names;
    size_t nnames, capnames;
} rp_model_inputs;

void rp_model_inputs_init(rp_model_inputs *mi, rn_stacks *stacks, rp_source *src, const tf_reader *reader,
                          const char *const *options, int noptions);
void rp_model_inputs_free(rp_model_inputs *mi);
/* Point the replay options' setting, stack_has and stack_functions at mi. */
void rp_model_inputs_attach(rp_model_inputs *mi, rp_options *o);

#endif
