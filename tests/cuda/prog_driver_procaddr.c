/*
 * prog_driver_procaddr.c - the driver as a statically linked runtime sees
 * it: dlopen libcuda.so.1 (RTLD_LOCAL), dlsym cuGetProcAddress_v2, and every
 * other entry point from cuGetProcAddress.  Prints "api result ptr".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef unsigned long long dptr;
typedef int (*gpa_fn)(const char *, void **, int, uint64_t, int *);

static gpa_fn gpa;

static void *get(const char *name)
{
    void *fn = NULL;
    int status = -1;
    if (gpa(name, &fn, 12080, 0, &status) != 0 || status != 0)
        printf("missing %s\n", name);
    return fn;
}

static void show(const char *api, int r, unsigned long long p)
{
    printf("%s %d %llu\n", api, r, p);
}

int main(void)
{
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!libcuda) {
        printf("no libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    gpa = (gpa_fn)dlsym(libcuda, "cuGetProcAddress_v2");
    /* Asking for cuGetProcAddress itself, then using the answer. */
    gpa = (gpa_fn)get("cuGetProcAddress");

    const void *table = NULL;
    int (*export_table)(const void **, const void *) = get("cuGetExportTable");
    export_table(&table, NULL);
    printf("export_table %d\n", table ? *(const int *)table : -1);

    dptr p = 0, reserved = 0;
    void *host = NULL;
    size_t pitch = 0;
    unsigned long long handle = 0;
    int r;

    r = ((int (*)(dptr *, size_t))get("cuMemAlloc"))(&p, 65536);
    show("cuMemAlloc_v2", r, p);
    r = ((int (*)(dptr))get("cuMemFree"))(p);
    show("cuMemFree_v2", r, p);
    r = ((int (*)(dptr *, size_t, void *))get("cuMemAllocAsync"))(&p, 1024, (void *)0x5eed);
    show("cuMemAllocAsync", r, p);
    r = ((int (*)(dptr, void *))get("cuMemFreeAsync"))(p, (void *)0x5eed);
    show("cuMemFreeAsync", r, p);
    r = ((int (*)(dptr *, size_t, void *, void *))get("cuMemAllocFromPoolAsync"))(
        &p, 2048, (void *)0xb001, (void *)0x5eed);
    show("cuMemAllocFromPoolAsync", r, p);
    r = ((int (*)(dptr *, size_t, unsigned))get("cuMemAllocManaged"))(&p, 4096, 1);
    show("cuMemAllocManaged", r, p);
    r = ((int (*)(dptr *, size_t *, size_t, size_t, unsigned))get("cuMemAllocPitch"))(
        &p, &pitch, 100, 10, 4);
    show("cuMemAllocPitch_v2", r, p);
    r = ((int (*)(void **, size_t))get("cuMemAllocHost"))(&host, 512);
    show("cuMemAllocHost_v2", r, (uintptr_t)host);
    r = ((int (*)(void *))get("cuMemFreeHost"))(host);
    show("cuMemFreeHost", r, (uintptr_t)host);
    r = ((int (*)(void **, size_t, unsigned))get("cuMemHostAlloc"))(&host, 256, 0);
    show("cuMemHostAlloc", r, (uintptr_t)host);

    struct { int type, handle_types, loc_type, loc_id; char rest[32]; } prop = { 1, 0, 1, 0, { 0 } };
    r = ((int (*)(unsigned long long *, size_t, const void *, unsigned long long))get(
        "cuMemCreate"))(&handle, 2 << 20, &prop, 0);
    show("cuMemCreate", r, handle);
    r = ((int (*)(dptr *, size_t, size_t, dptr, unsigned long long))get("cuMemAddressReserve"))(
        &reserved, 4 << 20, 0, 0, 0);
    show("cuMemAddressReserve", r, reserved);
    r = ((int (*)(dptr, size_t, size_t, unsigned long long, unsigned long long))get("cuMemMap"))(
        reserved, 2 << 20, 0, handle, 0);
    show("cuMemMap", r, reserved);
    r = ((int (*)(dptr, size_t))get("cuMemUnmap"))(reserved, 2 << 20);
    show("cuMemUnmap", r, reserved);
    r = ((int (*)(unsigned long long))get("cuMemRelease"))(handle);
    show("cuMemRelease", r, handle);
    r = ((int (*)(dptr, size_t))get("cuMemAddressFree"))(reserved, 4 << 20);
    show("cuMemAddressFree", r, reserved);
    return 0;
}
