/*
 * import_json.h - JSON lines (trace-dump --json's schema, plus definition
 * lines) back into a log: `trace-replay import`, and its fuzzer.
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

#endif
