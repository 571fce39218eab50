/*
 * finding.h - what a check reports: a violation or a warning, with the
 * events involved, by seq and stack ids (resolved when printed).
 */
#ifndef RP_FINDING_H
#define RP_FINDING_H

#include <stdint.h>

typedef struct rp_site {
    uint64_t seq;             /* 0: none */
    uint32_t tid, native_stack, py_stack;
} rp_site;

typedef struct rp_finding {
    char invariant[40];       /* short stable name: "overlap", "sorted_index" */
    char message[480];
    rp_site at;               /* the event that broke it */
    rp_site other;            /* the earlier event it conflicts with */
} rp_finding;

#endif
