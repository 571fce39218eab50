/*
 * code_dealloc_wrapper.c - another tool that wraps the deallocator of
 * PyCode_Type after the preload did (loaded with ctypes by
 * workloads/code_reuse.py): the preload no longer hears of code objects'
 * deaths, and must stop trusting what it cached about them.
 */
typedef void (*destructor)(void *);

static destructor next_dealloc;
static unsigned long deaths;

static void wrapped(void *code)
{
    deaths++;
    next_dealloc(code);
}

/* PyTypeObject on 64-bit CPython 3.8 to 3.13: tp_dealloc after the 24-byte
 * header, tp_name, tp_basicsize and tp_itemsize. */
void wrap_code_dealloc(void *code_type)
{
    destructor *slot = (destructor *)((char *)code_type + 48);
    next_dealloc = *slot;
    *slot = wrapped;
}

unsigned long code_deaths_seen(void)
{
    return deaths;
}
