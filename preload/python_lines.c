/*
 * python_lines.c - CPython's line tables read in place (python_lines.h).
 *
 * Each walk is CPython's own, step for step (Objects/codeobject.c of the
 * version: PyCode_Addr2Line for co_lnotab; _PyCode_CheckLineNumber going
 * forward from _PyCode_InitAddressRange for the others), so that a cursor
 * left where one look-up stopped is where CPython's walk would have been
 * on its way to a later offset.  Where CPython trusts the table (it made
 * it), the reads here stop at its end instead.
 */
#include "python_lines.h"

static void restart(py_line_cursor *c, int format, int first)
{
    /* _PyLineTable_InitAddressRange: before the first range.  lnotab's
     * walk starts at address 0. */
    *c = (py_line_cursor){ .next = 0, .start = format == PY_LINES_LNOTAB ? 0 : -1, .end = 0,
                           .line = -1, .computed = first };
}

/* 3.8, 3.9: (address increment, signed line increment) pairs; the line of
 * `where` is the one reached before the first address past it. */
static int find_lnotab(const uint8_t *t, uint32_t size, int where, py_line_cursor *c)
{
    uint32_t i = c->next, pairs_end = size & ~1u;
    int addr = c->start, line = c->computed;
    while (i < pairs_end) {
        int next_addr = addr + t[i];
        if (next_addr > where)
            break;
        addr = next_addr;
        line += (int8_t)t[i + 1];
        i += 2;
    }
    c->next = i;
    c->start = addr;
    c->computed = line;
    return line;
}

/* 3.10: (length in bytes, signed line delta) pairs, -128 for no line;
 * a range of length 0 only moves the line. */
static int find_310(const uint8_t *t, uint32_t size, int where, py_line_cursor *c)
{
    while (c->end <= where) {
        if (c->next >= size)
            return -1;
        do {
            if (c->next + 2 > size)
                return -1;      /* CPython would read past the end */
            c->start = c->end;
            c->end += t[c->next];
            int delta = (int8_t)t[c->next + 1];
            c->next += 2;
            if (delta == -128) {
                c->line = -1;
            } else {
                c->computed += delta;
                c->line = c->computed;
            }
        } while (c->start == c->end);
    }
    return c->line;
}

/* An unsigned varint of the location table: 6 bits a byte, bit 6 for more. */
static unsigned read_varint(const uint8_t *t, uint32_t size, uint32_t i)
{
    unsigned value = 0;
    for (unsigned shift = 0; i < size && shift < 32; shift += 6) {
        unsigned byte = t[i++];
        value |= (byte & 63) << shift;
        if (!(byte & 64))
            break;
    }
    return value;
}

/* 3.11 and later: entries of a first byte (bit 7 set, a 4-bit code, the
 * length in code units less one) and its operands; only the start line's
 * delta matters here (Objects/locations.md). */
static int find_locations(const uint8_t *t, uint32_t size, int where, py_line_cursor *c)
{
    while (c->end <= where) {
        if (c->next >= size)
            return -1;
        uint8_t first = t[c->next];
        int code = (first >> 3) & 15, delta = 0;
        if (code == 13 || code == 14) {         /* no columns; long form */
            unsigned v = read_varint(t, size, c->next + 1);
            delta = v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
        } else if (code >= 10 && code <= 12) {  /* one-line forms */
            delta = code - 10;
        }
        c->computed += delta;
        c->line = (first >> 3) == 0x1f ? -1 : c->computed;   /* no location */
        c->start = c->end;
        c->end += ((first & 7) + 1) * 2;
        do
            c->next++;
        while (c->next < size && !(t[c->next] & 128));
    }
    return c->line;
}

int py_line_find(int format, const uint8_t *table, uint32_t size, int first, int where,
                 py_line_cursor *cursor)
{
    if (where < 0)
        return first;
    if (where < cursor->start)
        restart(cursor, format, first);
    switch (format) {
    case PY_LINES_LNOTAB: return find_lnotab(table, size, where, cursor);
    case PY_LINES_310: return find_310(table, size, where, cursor);
    case PY_LINES_LOCATIONS: return find_locations(table, size, where, cursor);
    default: return -1;
    }
}
