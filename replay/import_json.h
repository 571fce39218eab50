/*
 * import_json.h - `trace-replay import`: JSON lines (trace-dump --json's
 * schema, plus definition lines) back into a log.
 */
#ifndef RP_IMPORT_JSON_H
#define RP_IMPORT_JSON_H

#include <stdint.h>
#include <stdio.h>

typedef struct rp_import_result {
    uint64_t events;           /* events written */
    unsigned long line;        /* lines read; on failure, the failing one */
    char err[512];             /* on failure, why */
} rp_import_result;

/* Reads JSON lines from in and writes them to fd as a log.  0, or -1 with
 * the failing line and the reason in *res. */
int rp_import(FILE *in, int fd, rp_import_result *res);

/* The command: argv as main's, after the word "import". */
int cmd_import(int argc, char **argv);

#endif
