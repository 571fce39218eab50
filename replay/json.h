/*
 * json.h - a small streaming JSON writer for --json output.
 *
 * Keys are written in the order the caller gives them, numbers as integers,
 * strings escaped; commas and nesting are tracked here so callers stay
 * short.  Output is compact (one line) and byte-identical for equal input.
 */
#ifndef RP_JSON_H
#define RP_JSON_H

#include <stdint.h>
#include <stdio.h>

typedef struct rp_json {
    FILE *f;
    int depth;
    int first[32];      /* nothing written yet at this depth */
} rp_json;

void rp_json_init(rp_json *j, FILE *f);
void rp_json_obj(rp_json *j, const char *key);    /* key NULL inside arrays */
void rp_json_end_obj(rp_json *j);
void rp_json_arr(rp_json *j, const char *key);
void rp_json_end_arr(rp_json *j);
void rp_json_u64(rp_json *j, const char *key, uint64_t v);
void rp_json_i64(rp_json *j, const char *key, int64_t v);
void rp_json_str(rp_json *j, const char *key, const char *s);  /* NULL: null */
void rp_json_hex(rp_json *j, const char *key, uint64_t v);     /* "0x..." */
void rp_json_bool(rp_json *j, const char *key, int v);
void rp_json_null(rp_json *j, const char *key);
void rp_json_double(rp_json *j, const char *key, double v);    /* 4 decimals */

#endif
