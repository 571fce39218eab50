/*
 * json.h - the one JSON writer: every --json of trace-replay, its report and
 * export, and trace-dump --json.
 *
 * Keys are written in the order the caller gives them, numbers as integers,
 * commas and nesting tracked here so callers stay short.  Output is compact
 * (one line per top-level value) and byte-identical for equal input.
 *
 * Always valid UTF-8: strings from a log may hold any bytes.  Valid UTF-8
 * passes through; control characters are escaped (\n, \t, \r, \", \\ and
 * \u00XX); a byte that is not part of valid UTF-8 becomes \udcXX (XX its
 * value: the lone-surrogate escape of PEP 383), so nothing is passed through
 * raw and nothing is lost: trace-replay import, and Python's
 * os.fsencode(), turn it back into the byte.
 *
 * Writes are buffered here and go to the FILE when a top-level value ends
 * (rn_json_flush for the rest): do not write to the FILE in between.
 */
#ifndef RN_JSON_H
#define RN_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RN_JSON_DEPTH 32

typedef struct rn_json {
    FILE *f;
    int depth;
    int first[RN_JSON_DEPTH];   /* nothing written yet at this depth */
    char *buf;                  /* pending output */
    size_t len, cap;
} rn_json;

void rn_json_init(rn_json *j, FILE *f);
/* Write what is pending and release the buffer; 0, or -1 when the FILE failed. */
int rn_json_close(rn_json *j);
void rn_json_flush(rn_json *j);

void rn_json_obj(rn_json *j, const char *key);    /* key NULL inside arrays */
void rn_json_end_obj(rn_json *j);
void rn_json_arr(rn_json *j, const char *key);
void rn_json_end_arr(rn_json *j);
void rn_json_u64(rn_json *j, const char *key, uint64_t v);
void rn_json_i64(rn_json *j, const char *key, int64_t v);
void rn_json_str(rn_json *j, const char *key, const char *s);  /* NULL: null */
void rn_json_strn(rn_json *j, const char *key, const char *s, size_t n);
void rn_json_hex(rn_json *j, const char *key, uint64_t v);     /* "0x..." */
void rn_json_bool(rn_json *j, const char *key, int v);
void rn_json_null(rn_json *j, const char *key);
void rn_json_double(rn_json *j, const char *key, double v);    /* 4 decimals */
/* A number with a fraction of exactly three digits: whole.frac (export's
 * microseconds). */
void rn_json_fixed3(rn_json *j, const char *key, uint64_t whole, unsigned frac);
/* A value already written as JSON (a cached fragment). */
void rn_json_raw(rn_json *j, const char *key, const char *json, size_t n);

/* s as a JSON string (quotes included) appended to *out (a growing buffer of
 * *len bytes, capacity *cap): for callers that cache fragments. */
void rn_json_quote(char **out, size_t *len, size_t *cap, const char *s, size_t n);

#endif
