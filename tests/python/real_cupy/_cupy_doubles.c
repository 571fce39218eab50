/*
 * _cupy_doubles.c - runs real CuPy's memory pool on the CUDA test doubles.
 *
 * CuPy 13+ links the CUDA runtime statically into
 * cupy_backends.cuda.api.runtime; that runtime needs the real driver's
 * private export tables, which the driver double cannot give.  Every other
 * CuPy module reaches the runtime through the module's __pyx_capi__ (Cython
 * C-API capsules, looked up when the caller module is imported).  install()
 * swaps the capsules (and the Python-level names) of the calls the pool and
 * ndarray allocation make for these stand-ins, which do what the static
 * runtime does on a GPU: open libcuda.so.1, get cuMemAlloc_v2/cuMemFree_v2
 * through cuGetProcAddress_v2, and call them.  Streams and events are
 * handles; memcpy/memset act on the double's host memory.  Kernels cannot run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <stdatomic.h>

typedef int (*gpa_fn)(const char *, void **, int, uint64_t, int *);
static int (*drv_alloc)(unsigned long long *, size_t);
static int (*drv_free)(unsigned long long);
static int (*drv_host_alloc)(void **, size_t, unsigned);
static int (*drv_free_host)(void *);
static PyObject *(*real_check_status)(int, int);
static _Atomic intptr_t next_handle = 0x5000;
static int current_device;

static int load_driver(void)
{
    if (drv_alloc)
        return 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        PyErr_Format(PyExc_RuntimeError, "_cupy_doubles: %s", dlerror());
        return -1;
    }
    gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    if (!gpa || gpa("cuMemAlloc", (void **)&drv_alloc, 13000, 0, NULL) ||
        gpa("cuMemFree", (void **)&drv_free, 13000, 0, NULL) ||
        gpa("cuMemHostAlloc", (void **)&drv_host_alloc, 13000, 0, NULL) ||
        gpa("cuMemFreeHost", (void **)&drv_free_host, 13000, 0, NULL)) {
        PyErr_SetString(PyExc_RuntimeError, "_cupy_doubles: no cuMemAlloc in libcuda.so.1");
        drv_alloc = NULL;
        return -1;
    }
    return 0;
}

/* cudaError_t from CUresult: OOM is 2 in both. */
static int fail(int status)
{
    PyObject *r = real_check_status(status, 0);
    Py_XDECREF(r);
    return -1;
}

/* ---- C ABI stand-ins (signatures as in the capsules' names) ---- */
static intptr_t c_malloc(size_t size, int skip)
{
    (void)skip;
    unsigned long long p = 0;
    if (load_driver() < 0)
        return 0;
    if (size == 0)
        return 0;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = drv_alloc(&p, size);
    Py_END_ALLOW_THREADS
    if (st) {
        fail(st == 2 ? 2 : 1);
        return 0;
    }
    return (intptr_t)p;
}

static PyObject *c_free(intptr_t ptr, int skip)
{
    (void)skip;
    if (load_driver() < 0)
        return NULL;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = drv_free((unsigned long long)ptr);
    Py_END_ALLOW_THREADS
    if (st) {
        fail(1);
        return NULL;
    }
    Py_RETURN_NONE;
}

static intptr_t c_host_alloc(size_t size, unsigned flags, int skip)
{
    (void)skip;
    void *p = NULL;
    if (load_driver() < 0)
        return 0;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = drv_host_alloc(&p, size, flags);
    Py_END_ALLOW_THREADS
    if (st) {
        fail(st == 2 ? 2 : 1);
        return 0;
    }
    return (intptr_t)p;
}

static PyObject *c_free_host(intptr_t ptr, int skip)
{
    (void)skip;
    if (load_driver() < 0)
        return NULL;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = drv_free_host((void *)ptr);
    Py_END_ALLOW_THREADS
    if (st) {
        fail(1);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *c_none0(int skip) { (void)skip; Py_RETURN_NONE; }
static PyObject *c_none_i(intptr_t a, int skip) { (void)a, (void)skip; Py_RETURN_NONE; }
static PyObject *c_none_ii(intptr_t a, intptr_t b, int skip) { (void)a, (void)b, (void)skip; Py_RETURN_NONE; }
static PyObject *c_none_v(void) { Py_RETURN_NONE; }
static PyObject *c_stream_wait(intptr_t s, intptr_t e, int skip, void *opt) { (void)s, (void)e, (void)skip, (void)opt; Py_RETURN_NONE; }
static int c_get_device(int skip) { (void)skip; return current_device; }
static PyObject *c_set_device(int d, int skip)
{
    (void)skip;
    if (d != 0) {
        fail(101);   /* cudaErrorInvalidDevice */
        return NULL;
    }
    current_device = d;
    Py_RETURN_NONE;
}
static int c_device_count(int skip) { (void)skip; return 1; }
static int c_version(int skip) { (void)skip; return 13000; }
static int c_major(int skip) { (void)skip; return 13; }
static int c_attr(int attr, int dev, int skip)
{
    (void)dev, (void)skip;
    switch (attr) {
    case 75: return 9;   /* compute capability major */
    case 76: return 0;
    case 16: return 132; /* multiprocessors */
    case 1: return 1024; /* max threads per block */
    default: return 0;   /* MemoryPoolsSupported (115) and others: no */
    }
}
static int c_zero_i(intptr_t a, int skip) { (void)a, (void)skip; return 0; }
static intptr_t c_handle(int skip) { (void)skip; return atomic_fetch_add(&next_handle, 16); }
static intptr_t c_handle_u(unsigned flags, int skip) { (void)flags, (void)skip; return atomic_fetch_add(&next_handle, 16); }
static intptr_t c_handle_ui(unsigned flags, int prio, int skip) { (void)flags, (void)prio, (void)skip; return atomic_fetch_add(&next_handle, 16); }
static unsigned c_stream_flags(intptr_t s, int skip) { (void)s, (void)skip; return 0; }

#define TOTAL_MEM (80ull << 30)
static PyObject *c_mem_get_info(int skip)
{
    (void)skip;
    return Py_BuildValue("(KK)", (unsigned long long)(64ull << 30), (unsigned long long)TOTAL_MEM);
}
static PyObject *c_memcpy(intptr_t dst, intptr_t src, size_t n, int kind, int skip)
{
    (void)kind, (void)skip;
    if (n)
        memmove((void *)dst, (const void *)src, n);
    Py_RETURN_NONE;
}
static PyObject *c_memcpy_async(intptr_t dst, intptr_t src, size_t n, int kind, intptr_t s, int skip)
{
    (void)s;
    return c_memcpy(dst, src, n, kind, skip);
}
static PyObject *c_memset(intptr_t p, int v, size_t n, int skip)
{
    (void)skip;
    if (n)
        memset((void *)p, v, n);
    Py_RETURN_NONE;
}
static PyObject *c_memset_async(intptr_t p, int v, size_t n, intptr_t s, int skip)
{
    (void)s;
    return c_memset(p, v, n, skip);
}
static PyObject *c_props(int dev, int skip)
{
    (void)skip;
    return Py_BuildValue("{s:y,s:K,s:i,s:i,s:i,s:i,s:i}", "name", "double", "totalGlobalMem",
                         (unsigned long long)TOTAL_MEM, "major", 9, "minor", 0,
                         "multiProcessorCount", 132, "deviceId", dev, "pciBusID", 0);
}
static int c_can_access_peer(int a, int b, int skip) { (void)a, (void)b, (void)skip; return 0; }
static PyObject *c_peer(int a, int skip) { (void)a, (void)skip; Py_RETURN_NONE; }

struct swap { const char *name; void *fn; };
static const struct swap swaps[] = {
    { "malloc", (void *)c_malloc },
    { "free", (void *)c_free },
    { "hostAlloc", (void *)c_host_alloc },
    { "freeHost", (void *)c_free_host },
    { "pointerGetMemoryType", (void *)c_zero_i },   /* unregistered host memory */
    { "getDevice", (void *)c_get_device },
    { "setDevice", (void *)c_set_device },
    { "getDeviceCount", (void *)c_device_count },
    { "runtimeGetVersion", (void *)c_version },
    { "driverGetVersion", (void *)c_version },
    { "_getCUDAMajorVersion", (void *)c_major },
    { "deviceGetAttribute", (void *)c_attr },
    { "getDeviceProperties", (void *)c_props },
    { "memGetInfo", (void *)c_mem_get_info },
    { "deviceSynchronize", (void *)c_none0 },
    { "_ensure_context", (void *)c_none_v },
    { "streamCreate", (void *)c_handle },
    { "streamCreateWithFlags", (void *)c_handle_u },
    { "streamCreateWithPriority", (void *)c_handle_ui },
    { "streamDestroy", (void *)c_none_i },
    { "streamSynchronize", (void *)c_none_i },
    { "streamQuery", (void *)c_none_i },
    { "streamIsCapturing", (void *)c_zero_i },
    { "streamGetFlags", (void *)c_stream_flags },
    { "streamGetPriority", (void *)c_zero_i },
    { "streamWaitEvent", (void *)c_stream_wait },
    { "eventCreate", (void *)c_handle },
    { "eventCreateWithFlags", (void *)c_handle_u },
    { "eventDestroy", (void *)c_none_i },
    { "eventSynchronize", (void *)c_none_i },
    { "eventQuery", (void *)c_none_i },
    { "eventRecord", (void *)c_none_ii },
    { "memcpy", (void *)c_memcpy },
    { "memcpyAsync", (void *)c_memcpy_async },
    { "memset", (void *)c_memset },
    { "memsetAsync", (void *)c_memset_async },
    { "deviceCanAccessPeer", (void *)c_can_access_peer },
    { "_deviceEnsurePeerAccess", (void *)c_peer },
    { "deviceEnablePeerAccess", (void *)c_peer },
};

/* install(runtime_module): swap the capsules in its __pyx_capi__ (same
 * names, so Cython's signature check passes).  Returns the swapped names. */
static PyObject *install(PyObject *self, PyObject *mod)
{
    (void)self;
    PyObject *capi = PyObject_GetAttrString(mod, "__pyx_capi__");
    if (!capi)
        return NULL;
    PyObject *cs = PyDict_GetItemString(capi, "check_status");
    if (!cs || !(real_check_status = PyCapsule_GetPointer(cs, PyCapsule_GetName(cs)))) {
        Py_DECREF(capi);
        PyErr_SetString(PyExc_RuntimeError, "no check_status capsule");
        return NULL;
    }
    PyObject *done = PyList_New(0);
    for (size_t i = 0; i < sizeof swaps / sizeof *swaps; i++) {
        PyObject *old = PyDict_GetItemString(capi, swaps[i].name);
        if (!old)
            continue;
        const char *sig = PyCapsule_GetName(old);
        PyObject *cap = PyCapsule_New(swaps[i].fn, sig, NULL);
        if (!cap || PyDict_SetItemString(capi, swaps[i].name, cap) < 0) {
            Py_XDECREF(cap);
            Py_DECREF(capi);
            Py_DECREF(done);
            return NULL;
        }
        Py_DECREF(cap);
        PyObject *n = PyUnicode_FromString(swaps[i].name);
        PyList_Append(done, n);
        Py_DECREF(n);
    }
    Py_DECREF(capi);
    return done;
}

/* Python-level entry points for the same calls. */
static PyObject *py_malloc(PyObject *s, PyObject *a)
{
    (void)s;
    size_t n = PyLong_AsSize_t(a);
    if (n == (size_t)-1 && PyErr_Occurred())
        return NULL;
    intptr_t p = c_malloc(n, 0);
    if (!p && PyErr_Occurred())
        return NULL;
    return PyLong_FromSsize_t(p);
}
static PyObject *py_free(PyObject *s, PyObject *a)
{
    (void)s;
    intptr_t p = PyLong_AsSsize_t(a);
    if (p == -1 && PyErr_Occurred())
        return NULL;
    return c_free(p, 0);
}

static PyMethodDef methods[] = {
    { "install", install, METH_O, "swap the runtime module's capsules" },
    { "malloc", py_malloc, METH_O, "cudaMalloc on the driver double" },
    { "free", py_free, METH_O, "cudaFree on the driver double" },
    { NULL, NULL, 0, NULL },
};
static struct PyModuleDef def = { PyModuleDef_HEAD_INIT, "_cupy_doubles", NULL, -1, methods };
PyMODINIT_FUNC PyInit__cupy_doubles(void) { return PyModule_Create(&def); }
