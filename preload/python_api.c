/*
 * python_api.c - resolving the CPython C API at run time (see python_api.h).
 */
#include "python_api.h"

#include <dlfcn.h>
#include <stdlib.h>

py_api py;

/* dlsym returns void *; a function pointer is filled through memcpy-free
 * assignment of the same size, which POSIX guarantees to work. */
#define RESOLVE(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))

int py_api_probe(void)
{
    RESOLVE(PySys_AddAuditHook, "PySys_AddAuditHook");
    RESOLVE(Py_IsInitialized, "Py_IsInitialized");
    RESOLVE(PyMem_GetAllocator, "PyMem_GetAllocator");
    RESOLVE(PyMem_SetAllocator, "PyMem_SetAllocator");
    return py.PySys_AddAuditHook && py.Py_IsInitialized && py.PyMem_GetAllocator &&
           py.PyMem_SetAllocator;
}

static int parse_version(void)
{
    const char *v = py.Py_GetVersion();
    char *end;
    if (strtol(v, &end, 10) != 3 || *end != '.')
        return 0;
    py.minor = (int)strtol(end + 1, &end, 10);
    py.micro = *end == '.' ? (int)strtol(end + 1, NULL, 10) : 0;
    return py.minor >= 8 && py.minor <= 13;
}

static void resolve_current_tstate(void)
{
    /* 3.13 renamed the accessor; the old name is gone from some builds. */
    RESOLVE(current_tstate, "PyThreadState_GetUnchecked");
    if (!py.current_tstate)
        RESOLVE(current_tstate, "_PyThreadState_UncheckedGet");
}

int py_api_resolve(const char **why)
{
    RESOLVE(Py_GetVersion, "Py_GetVersion");
    if (!py.Py_GetVersion || !parse_version()) {
        *why = "unsupported Python version (3.8 to 3.13 are supported)";
        return 0;
    }
    /* CPython's, not ours (python_alloc.c): the next definition after
     * libtrace.so, or a static interpreter's own, which comes before it. */
    *(void **)&py._PyMem_GetCurrentAllocatorName = dlsym(RTLD_NEXT, "_PyMem_GetCurrentAllocatorName");
    if (!py._PyMem_GetCurrentAllocatorName)
        RESOLVE(_PyMem_GetCurrentAllocatorName, "_PyMem_GetCurrentAllocatorName");
    RESOLVE(PyImport_ImportModule, "PyImport_ImportModule");
    RESOLVE(PyImport_GetModule, "PyImport_GetModule");
    RESOLVE(PyObject_GetAttrString, "PyObject_GetAttrString");
    RESOLVE(PyObject_CallFunctionObjArgs, "PyObject_CallFunctionObjArgs");
    RESOLVE(PyList_Append, "PyList_Append");
    RESOLVE(PyCFunction_NewEx, "PyCFunction_NewEx");
    RESOLVE(PyUnicode_InternFromString, "PyUnicode_InternFromString");
    RESOLVE(PyUnicode_CompareWithASCIIString, "PyUnicode_CompareWithASCIIString");
    RESOLVE(PyTuple_GetItem, "PyTuple_GetItem");
    RESOLVE(PyTuple_Pack, "PyTuple_Pack");
    RESOLVE(PyTuple_Size, "PyTuple_Size");
    RESOLVE(PyObject_Type, "PyObject_Type");
    RESOLVE(PyType_GetFlags, "PyType_GetFlags");
    RESOLVE(PyDict_New, "PyDict_New");
    RESOLVE(PyDict_SetItemString, "PyDict_SetItemString");
    RESOLVE(PyObject_SetItem, "PyObject_SetItem");
    RESOLVE(PyStaticMethod_New, "PyStaticMethod_New");
    RESOLVE(PyEval_SetProfile, "PyEval_SetProfile");
    RESOLVE(PyDict_GetItem, "PyDict_GetItem");
    RESOLVE(PyLong_AsSsize_t, "PyLong_AsSsize_t");
    RESOLVE(PyLong_AsUnsignedLongLongMask, "PyLong_AsUnsignedLongLongMask");
    RESOLVE(PyCapsule_GetPointer, "PyCapsule_GetPointer");
    RESOLVE(PyCapsule_GetName, "PyCapsule_GetName");
    RESOLVE(PyUnicode_AsUTF8, "PyUnicode_AsUTF8");
    RESOLVE(Py_IncRef, "Py_IncRef");
    RESOLVE(Py_DecRef, "Py_DecRef");
    RESOLVE(PyErr_Occurred, "PyErr_Occurred");
    RESOLVE(PyErr_Clear, "PyErr_Clear");
    RESOLVE(PyErr_Fetch, "PyErr_Fetch");
    RESOLVE(PyErr_Restore, "PyErr_Restore");
    RESOLVE(PyCode_Addr2Line, "PyCode_Addr2Line");
    RESOLVE(PyGILState_GetThisThreadState, "PyGILState_GetThisThreadState");
    RESOLVE(PyModule_GetDict, "PyModule_GetDict");
    RESOLVE(PyDict_Next, "PyDict_Next");
    RESOLVE(PyObject_GetAttr, "PyObject_GetAttr");
    RESOLVE(PyUnicode_AsUTF8AndSize, "PyUnicode_AsUTF8AndSize");
    py.none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    py.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    py.type_type = dlsym(RTLD_DEFAULT, "PyType_Type");
    py.bytes_type = dlsym(RTLD_DEFAULT, "PyBytes_Type");
    py.list_type = dlsym(RTLD_DEFAULT, "PyList_Type");
    resolve_current_tstate();
    RESOLVE(PyInterpreterState_Get, "PyInterpreterState_Get");
    if (!py.PyInterpreterState_Get)
        RESOLVE(PyInterpreterState_Get, "_PyInterpreterState_Get");
    RESOLVE(PyInterpreterState_GetID, "PyInterpreterState_GetID");
    RESOLVE(PyLong_FromSsize_t, "PyLong_FromSsize_t");

    void **first = (void **)&py.Py_IsInitialized;
    void **last = (void **)&py.type_type;
    for (void **f = first; f <= last; f++) {
        if (!*f) {
            *why = "a CPython C API function is missing";
            return 0;
        }
    }
    return 1;
}
