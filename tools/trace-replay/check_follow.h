/*
 * check_follow.h - trace-replay check --follow: the check of a log while the
 * recorder writes it, and what to do to the traced process at a violation.
 */
#ifndef RP_CHECK_FOLLOW_H
#define RP_CHECK_FOLLOW_H

#include "replay.h"

typedef enum rp_on_violation {
    RP_ON_VIOLATION_REPORT,     /* report it and end; the process goes on */
    RP_ON_VIOLATION_STOP,       /* SIGSTOP the process, report, end */
    RP_ON_VIOLATION_ABORT,      /* SIGABRT the process (a core of the damage), report, end */
    RP_ON_VIOLATION_CONTINUE    /* report each violation as it comes; end with the log */
} rp_on_violation;

typedef struct rp_check_follow {
    const char *log;
    int pid;                    /* --pid: the writer, before its log exists (0: none) */
    rp_on_violation on_violation;
    int json;
    const char *model_name;
    const char *const *debug_dirs;
    int ndebug;
    const char *const *model_options;   /* --model-option KEY=VALUE */
    int nmodel_options;
    int full_stacks;
    rp_options o;               /* the replay's options, as check's */
} rp_check_follow;

/* check's exit statuses (verdict.h): 0 clean, 1 violation, 2 no log or not
 * a log, 3 inconclusive. */
int rp_check_follow_run(rp_check_follow *c);
/* "stop" -> RP_ON_VIOLATION_STOP ...; -1 when the word is none of them. */
int rp_on_violation_parse(const char *word);

#endif
