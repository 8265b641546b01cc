/* What CPython's stable ABI (Py_LIMITED_API=0x030B0000: one abi3 build for CPython 3.11 and
 * later) lacks, as the functions it has. Without Py_LIMITED_API (the per-version builds, 3.9
 * and 3.10, and a pip install) the macros stay CPython's own. bench/abi3_macro_cost.py
 * measured the checked calls against the macros: no cost measurable (docs/design-notes.md). */
#ifndef TORCHSCOPE_NATIVE_COMPAT_H
#define TORCHSCOPE_NATIVE_COMPAT_H

#ifdef Py_LIMITED_API
#define PyTuple_SET_ITEM(t, i, v) ((void)PyTuple_SetItem((t), (i), (v)))
#define PyTuple_GET_ITEM(t, i) PyTuple_GetItem((t), (i))
#define PyTuple_GET_SIZE(t) PyTuple_Size(t)
#define PyList_GET_ITEM(l, i) PyList_GetItem((l), (i))
#define PyList_GET_SIZE(l) PyList_Size(l)
#define PyFloat_AS_DOUBLE(f) PyFloat_AsDouble(f)
#define PyBytes_AS_STRING(b) PyBytes_AsString(b)
#define PyBytes_GET_SIZE(b) PyBytes_Size(b)
#define PyDict_GET_SIZE(d) PyDict_Size(d)
#define PyObject_CallOneArg(f, a) PyObject_CallFunctionObjArgs((f), (a), NULL)
#define Py_SETREF(dst, src)                                                                  \
    do {                                                                                     \
        PyObject *_ts_old = (PyObject *)(dst);                                               \
        (dst) = (src);                                                                       \
        Py_DECREF(_ts_old);                                                                  \
    } while (0)
#define Py_XSETREF(dst, src)                                                                 \
    do {                                                                                     \
        PyObject *_ts_old = (PyObject *)(dst);                                               \
        (dst) = (src);                                                                       \
        Py_XDECREF(_ts_old);                                                                 \
    } while (0)
#endif

/* A heap type's instance goes: its type's tp_free, then the reference it held on its type. */
static inline void free_instance(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    freefunc free_fn = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_fn(self);
    Py_DECREF(type);
}

#endif
