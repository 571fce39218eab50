/* json.c - streaming JSON writer. */
#include "json.h"

#include <inttypes.h>

void rp_json_init(rp_json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->first[0] = 1;
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Comma and key before a value. */
static void lead(rp_json *j, const char *key)
{
    if (!j->first[j->depth])
        fputc(',', j->f);
    j->first[j->depth] = 0;
    if (key) {
        put_string(j->f, key);
        fputc(':', j->f);
    }
}

static void open_(rp_json *j, const char *key, char c)
{
    lead(j, key);
    fputc(c, j->f);
    if (j->depth < 31)
        j->depth++;
    j->first[j->depth] = 1;
}

static void close_(rp_json *j, char c)
{
    fputc(c, j->f);
    if (j->depth > 0)
        j->depth--;
    if (j->depth == 0)
        fputc('\n', j->f);
}

void rp_json_obj(rp_json *j, const char *key) { open_(j, key, '{'); }
void rp_json_end_obj(rp_json *j) { close_(j, '}'); }
void rp_json_arr(rp_json *j, const char *key) { open_(j, key, '['); }
void rp_json_end_arr(rp_json *j) { close_(j, ']'); }

void rp_json_u64(rp_json *j, const char *key, uint64_t v)
{
    lead(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void rp_json_i64(rp_json *j, const char *key, int64_t v)
{
    lead(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void rp_json_str(rp_json *j, const char *key, const char *s)
{
    lead(j, key);
    if (s)
        put_string(j->f, s);
    else
        fputs("null", j->f);
}

void rp_json_hex(rp_json *j, const char *key, uint64_t v)
{
    lead(j, key);
    fprintf(j->f, "\"0x%" PRIx64 "\"", v);
}

void rp_json_bool(rp_json *j, const char *key, int v)
{
    lead(j, key);
    fputs(v ? "true" : "false", j->f);
}

void rp_json_null(rp_json *j, const char *key)
{
    lead(j, key);
    fputs("null", j->f);
}

void rp_json_double(rp_json *j, const char *key, double v)
{
    lead(j, key);
    fprintf(j->f, "%.4f", v);
}
