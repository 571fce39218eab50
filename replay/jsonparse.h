/*
 * jsonparse.h - a small JSON reader for one document in memory (a line of
 * JSON lines).
 *
 * Values become nodes in one array, linked child to next sibling; strings are
 * unescaped in place in the caller's buffer.  Integers keep all 64 bits
 * (addresses do not survive a double); other numbers are kept as doubles.
 */
#ifndef RP_JSONPARSE_H
#define RP_JSONPARSE_H

#include <stddef.h>
#include <stdint.h>

enum { JP_NULL, JP_BOOL, JP_INT, JP_REAL, JP_STRING, JP_ARRAY, JP_OBJECT };

#define JP_NONE UINT32_MAX

typedef struct jp_node {
    uint8_t type;
    uint8_t negative;          /* JP_INT: the value is -u */
    uint32_t child, next;      /* first member or element; next sibling (JP_NONE) */
    const char *key;           /* member name inside an object, else NULL */
    const char *str;           /* JP_STRING, NUL-terminated (may hold NULs: len) */
    size_t len;
    uint64_t u;                /* JP_INT magnitude, JP_BOOL 0/1 */
    double real;               /* JP_REAL, and JP_INT as a double */
} jp_node;

typedef struct jp_doc {
    jp_node *n;                /* n[0] is the root */
    size_t len, cap;
} jp_doc;

void jp_init(jp_doc *d);
void jp_free(jp_doc *d);
/* Parse text (modified in place; must stay alive while d is used).
 * 0, or -1 with a message naming the offset in err. */
int jp_parse(jp_doc *d, char *text, char *err, size_t errlen);

/* Member of an object by name, or NULL. */
const jp_node *jp_get(const jp_doc *d, const jp_node *obj, const char *key);
/* i-th element / next element: jp_first(d, arr), then jp_next(d, node). */
const jp_node *jp_first(const jp_doc *d, const jp_node *container);
const jp_node *jp_next(const jp_doc *d, const jp_node *node);
/* Numbers and strings with a default for absent or mistyped members (a
 * number out of the result type's range counts as mistyped; jp_u64 takes a
 * negative integer modulo 2^64, as C converts it, and a "0x..." string of at
 * most 16 hex digits as that number).  Strings come unescaped; a lone
 * \udcXX (XX 80 to ff) is the byte XX, as our writer escapes bytes that are
 * not UTF-8. */
uint64_t jp_u64(const jp_doc *d, const jp_node *obj, const char *key, uint64_t dflt);
int64_t jp_i64(const jp_doc *d, const jp_node *obj, const char *key, int64_t dflt);
const char *jp_str(const jp_doc *d, const jp_node *obj, const char *key, size_t *len);

#endif
