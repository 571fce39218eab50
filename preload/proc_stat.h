/*
 * proc_stat.h - a field of a /proc/PID/stat line.
 *
 * Fields 3 on follow the last ')': the command name (field 2, in
 * parentheses) may hold anything, spaces and ')' included.
 */
#ifndef TRACE_PROC_STAT_H
#define TRACE_PROC_STAT_H

#include <string.h>

/* The start of field `field` (3 or more, as proc(5) numbers them) of a
 * NUL-terminated stat line, or NULL when the line has no such field. */
static inline const char *proc_stat_field(const char *line, int field)
{
    const char *p = strrchr(line, ')');
    if (!p || p[1] != ' ')
        return NULL;
    p += 2;   /* field 3 */
    for (int f = 3; f < field; f++) {
        p = strchr(p, ' ');
        if (!p)
            return NULL;
        p++;
    }
    return *p ? p : NULL;
}

#endif
