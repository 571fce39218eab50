/*
 * reinstall_allocator - a library that sets its own object allocator in its
 * constructor, before the interpreter starts (preloaded first), and sets it
 * again once the interpreter runs, keeping whatever it then finds as its
 * predecessor unless that is its own: what Scalene 2.x's libscalene.so does
 * (MakeLocalAllocator::reinstall, called from pywhere).  Its blocks carry a
 * 16-byte header, so a block freed through the wrong chain shows.
 * test_allocator_reinstall.py calls reinstall_allocator() through ctypes.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

typedef struct allocator {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t size);
    void (*free)(void *ctx, void *ptr);
} allocator;

typedef void (*allocator_fn)(int domain, allocator *a);

enum { DOMAIN_OBJ = 2, HEADER = 16 };

static allocator original;
static allocator_fn get, set;

static void *own_malloc(void *ctx, size_t size)
{
    (void)ctx;
    char *p = original.malloc(original.ctx, size + HEADER);
    return p ? p + HEADER : NULL;
}

static void *own_calloc(void *ctx, size_t nelem, size_t elsize)
{
    char *p = own_malloc(ctx, nelem * elsize);
    if (p)
        memset(p, 0, nelem * elsize);
    return p;
}

static void *own_realloc(void *ctx, void *ptr, size_t size)
{
    if (!ptr)
        return own_malloc(ctx, size);
    char *p = original.realloc(original.ctx, (char *)ptr - HEADER, size + HEADER);
    return p ? p + HEADER : NULL;
}

static void own_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (ptr)
        original.free(original.ctx, (char *)ptr - HEADER);
}

static allocator own = {
    .ctx = NULL, .malloc = own_malloc, .calloc = own_calloc, .realloc = own_realloc, .free = own_free,
};

__attribute__((constructor)) static void install(void)
{
    *(void **)&get = dlsym(RTLD_DEFAULT, "PyMem_GetAllocator");
    *(void **)&set = dlsym(RTLD_DEFAULT, "PyMem_SetAllocator");
    if (!get || !set)
        return;
    get(DOMAIN_OBJ, &original);
    set(DOMAIN_OBJ, &own);
}

/* 1 when it found another allocator in place and went on top of it. */
__attribute__((visibility("default"))) int reinstall_allocator(void)
{
    if (!get || !set)
        return -1;
    allocator current;
    get(DOMAIN_OBJ, &current);
    if (current.malloc == own_malloc)
        return 0;
    get(DOMAIN_OBJ, &original);
    set(DOMAIN_OBJ, &own);
    return 1;
}
