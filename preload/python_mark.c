/*
 * python_mark.c - marks and flushes asked for from Python, without ctypes:
 *
 *     sys.audit("gputrace.mark", "text")   (gputrace.mark(text))
 *     sys.audit("gputrace.flush")          (gputrace.flush())
 *
 * Why through the audit hook: a ctypes call builds argument objects, and any
 * allocation can start a collection, which would then land on the wrong side
 * of the mark (the pytest plugin marks test boundaries, and what a collection
 * frees is counted against the test it ran in).  sys.audit builds its
 * argument tuple before the hook runs; the hook reads the text in place and
 * creates no object.  Anything but (str,) is ignored without raising.
 */
#include "python_internal.h"
#include "python_text.h"
#include "flusher.h"
#include "pool_api.h"

#include <string.h>

#define PY_TPFLAGS_UNICODE_SUBCLASS (1UL << 28)
#define MARK_MAX 1024

static const py_layout *layout;

void python_mark_install(void)
{
    layout = py_layout_get();
}

static int is_str(py_object *o)
{
    py_object *type = py.PyObject_Type(o);      /* a new reference, no allocation */
    unsigned long flags = type ? py.PyType_GetFlags(type) : 0;
    if (type)
        py.Py_DecRef(type);
    return (flags & PY_TPFLAGS_UNICODE_SUBCLASS) != 0;
}

static void mark(py_object *args)
{
    if (!layout || !args || py.PyTuple_Size(args) != 1)
        return;
    py_object *text = py.PyTuple_GetItem(args, 0);
    if (!text || !is_str(text))
        return;
    char buf[MARK_MAX + 1];
    size_t n = py_text_utf8(layout, text, buf, MARK_MAX, NULL);
    buf[n] = '\0';
    pool_api_mark(buf);
}

void python_mark_on_audit_event(const char *event, py_object *args)
{
    if (strncmp(event, "gputrace.", 9) != 0)
        return;
    if (!strcmp(event + 9, "mark"))
        mark(args);
    else if (!strcmp(event + 9, "flush"))
        flush_now(0);
}
