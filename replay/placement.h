/*
 * placement.h - where a collection nested in a pool operation started, read
 * from its gc_start native stack against the model's table of the real
 * pool's functions (rp_place in model.h).
 *
 * The innermost frame the table names decides: a re-entrancy point's
 * function (the collection runs there), a function that is outside the
 * bookkeeping (it runs after the operation's work), or one whose callees
 * hold points the stack cannot tell apart (unsure).  A stack that names
 * none of them, or is missing, cannot place the collection (unknown).  A
 * caller never places an unsure or unknown collection at a point on its
 * own: that would report corruption that may not have happened.
 */
#ifndef RP_PLACEMENT_H
#define RP_PLACEMENT_H

#include <stdint.h>

#include "model.h"

typedef enum rp_placed {
    RP_PLACED_POINT,        /* at a point whose name starts with .point */
    RP_PLACED_OUTSIDE,      /* after the operation's work */
    RP_PLACED_UNSURE,       /* at one of the points, or after: ambiguous */
    RP_PLACED_UNKNOWN,      /* the stack says nothing the model knows */
} rp_placed;

typedef struct rp_placement {
    rp_placed where;
    const char *point;      /* RP_PLACED_POINT: the prefix of point names */
    const char *function;   /* the frame's function that decided, or NULL */
} rp_placement;

/* functions[0..n): the stack's function names, innermost first (NULL for a
 * frame that did not resolve). */
rp_placement rp_place_by_functions(const rp_place *table, const char *const *functions, uint32_t n);

/* The same when the stack can only be asked whether it names a function
 * (has(ctx, key)): a point's function wins over an unsure one, which wins
 * over an outside one (the nesting of re-entered operations is lost). */
rp_placement rp_place_by_query(const rp_place *table, int (*has)(void *ctx, const char *key), void *ctx);

/* Does a function (a symbol: "__pyx_f_..._append_to_free_list",
 * "append_to_free_list.isra.0") end in key, case aside, at a name
 * boundary? */
int rp_place_names(const char *function, const char *key);

/* Is point one of those the placement allows? */
int rp_placement_at(const rp_placement *p, const char *point);

#endif
