/* placement.c - see placement.h. */
#include "placement.h"

#include <ctype.h>
#include <string.h>

int rp_place_names(const char *function, const char *key)
{
    if (!function || !key || !*key)
        return 0;
    /* Neither a compiler's clone suffix (".isra.0", ".constprop.1",
     * ".part.0") nor, in a demangled C++ name, the parameter list is part
     * of the name: CuPy compiles its Cython as C++, whose static functions'
     * symbols demangle to "__pyx_f_..._try_malloc(__pyx_obj_...*, unsigned
     * long)", with " [clone .constprop.0]" after the list if cloned. */
    size_t n = strcspn(function, ".(");
    size_t k = strlen(key);
    if (k > n)
        return 0;
    const char *tail = function + n - k;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)tail[i]) != tolower((unsigned char)key[i]))
            return 0;
    /* The character before the name: the start, an underscore (C, Cython's
     * module and class prefixes), a digit (Cython's length prefixes), or in
     * C++ a scope's "::" or the space after a template's return type. */
    return tail == function || tail[-1] == '_' || isdigit((unsigned char)tail[-1]) || tail[-1] == ':' ||
           tail[-1] == ' ' || key[0] == '_';
}

static rp_placement of_entry(const rp_place *e, const char *function)
{
    rp_placement p = {RP_PLACED_UNSURE, NULL, function};
    if (e->kind == RP_PLACE_POINT) {
        p.where = RP_PLACED_POINT;
        p.point = e->point;
    } else if (e->kind == RP_PLACE_OUTSIDE) {
        p.where = RP_PLACED_OUTSIDE;
    }
    return p;
}

rp_placement rp_place_by_functions(const rp_place *table, const char *const *functions, uint32_t n)
{
    for (uint32_t i = 0; table && i < n; i++)
        for (const rp_place *e = table; e->function; e++)
            if (rp_place_names(functions[i], e->function))
                return of_entry(e, functions[i]);
    return (rp_placement){RP_PLACED_UNKNOWN, NULL, NULL};
}

rp_placement rp_place_by_query(const rp_place *table, int (*has)(void *ctx, const char *key), void *ctx)
{
    static const enum rp_place_kind order[] = {RP_PLACE_POINT, RP_PLACE_UNSURE, RP_PLACE_OUTSIDE};
    for (size_t k = 0; table && has && k < sizeof order / sizeof *order; k++)
        for (const rp_place *e = table; e->function; e++)
            if (e->kind == order[k] && has(ctx, e->function))
                return of_entry(e, e->function);
    return (rp_placement){RP_PLACED_UNKNOWN, NULL, NULL};
}

int rp_placement_at(const rp_placement *p, const char *point)
{
    return p->where == RP_PLACED_POINT && point && p->point && !strncmp(point, p->point, strlen(p->point));
}
