/* What Span (_native_span.c) and MemoryEvent (_native_memory.c) share: the ways a
 * NamedTuple is read (indices, slices, ==, hash, repr, pickling), for a C type that holds
 * its fields inline and makes field i on demand. */
#ifndef TORCHSCOPE_NATIVE_RECORD_H
#define TORCHSCOPE_NATIVE_RECORD_H

#include "_native.h"

typedef PyObject *(*FieldFn)(PyObject *self, Py_ssize_t i);

/* The fields as a tuple (a new reference). */
static inline PyObject *record_tuple(PyObject *self, Py_ssize_t n, FieldFn field) {
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++) {
        PyObject *v = field(self, i);
        if (v == NULL) Py_CLEAR(t);
        else PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* The functions of a record type `prefix` of six fields, field i made by field(self, i):
 * a getter per field (prefix_get_0 … _5, for the type's getset table), its sequence and
 * mapping slots (prefix_as_sequence, prefix_as_mapping), comparison as the tuple of its
 * fields (equal to the NamedTuple of the same values), hash, repr (fmt: six %r), and
 * pickling as pickled_as(self)(*fields), a type (a new reference) (prefix_methods). */
#define RECORD_METHODS(prefix, field, pickled_as, fmt)                                      \
    enum { prefix##_n = 6 };                                                                \
    static PyObject *prefix##_get_0(PyObject *self, void *Py_UNUSED(c)) { return field(self, 0); } \
    static PyObject *prefix##_get_1(PyObject *self, void *Py_UNUSED(c)) { return field(self, 1); } \
    static PyObject *prefix##_get_2(PyObject *self, void *Py_UNUSED(c)) { return field(self, 2); } \
    static PyObject *prefix##_get_3(PyObject *self, void *Py_UNUSED(c)) { return field(self, 3); } \
    static PyObject *prefix##_get_4(PyObject *self, void *Py_UNUSED(c)) { return field(self, 4); } \
    static PyObject *prefix##_get_5(PyObject *self, void *Py_UNUSED(c)) { return field(self, 5); } \
    RECORD_SLOTS(prefix, field, prefix##_n, pickled_as, fmt)                                \
    static PyMethodDef prefix##_methods[] = {                                               \
        {"__reduce__", prefix##_reduce, METH_NOARGS, NULL},                                 \
        {NULL, NULL, 0, NULL},                                                              \
    };

/* The type slots of a record type `prefix` (for its PyType_Spec's slot table). */
#define RECORD_TYPE_SLOTS(prefix)                                                           \
    {Py_tp_repr, prefix##_repr}, {Py_tp_hash, prefix##_hash},                               \
        {Py_tp_richcompare, prefix##_richcompare}, {Py_tp_methods, prefix##_methods},       \
        {Py_sq_length, prefix##_length}, {Py_sq_item, prefix##_item},                       \
        {Py_mp_length, prefix##_length}, {Py_mp_subscript, prefix##_subscript}

#define RECORD_SLOTS(prefix, field, n, pickled_as, fmt)                                     \
    static PyObject *prefix##_tuple(PyObject *self) { return record_tuple(self, n, field); } \
    static Py_ssize_t prefix##_length(PyObject *Py_UNUSED(self)) { return n; }              \
    static PyObject *prefix##_item(PyObject *self, Py_ssize_t i) {                          \
        if (i < 0 || i >= n) {                                                              \
            PyErr_SetString(PyExc_IndexError, #prefix " index out of range");               \
            return NULL;                                                                    \
        }                                                                                   \
        return field(self, i);                                                              \
    }                                                                                       \
    static PyObject *prefix##_subscript(PyObject *self, PyObject *key) {                    \
        if (PyIndex_Check(key)) {                                                           \
            Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);                       \
            if (i == -1 && PyErr_Occurred()) return NULL;                                   \
            return prefix##_item(self, i < 0 ? i + n : i);                                  \
        }                                                                                   \
        PyObject *t = prefix##_tuple(self); /* a slice */                                   \
        if (t == NULL) return NULL;                                                         \
        PyObject *out = PyObject_GetItem(t, key);                                           \
        Py_DECREF(t);                                                                       \
        return out;                                                                         \
    }                                                                                       \
    static PyObject *prefix##_richcompare(PyObject *self, PyObject *other, int op) {        \
        if (!PyTuple_Check(other) && !Py_IS_TYPE(other, Py_TYPE(self)))                     \
            Py_RETURN_NOTIMPLEMENTED;                                                       \
        PyObject *a = prefix##_tuple(self);                                                       \
        PyObject *b = Py_IS_TYPE(other, Py_TYPE(self)) ? prefix##_tuple(other) : Py_NewRef(other); \
        PyObject *out = a != NULL && b != NULL ? PyObject_RichCompare(a, b, op) : NULL;     \
        Py_XDECREF(a);                                                                      \
        Py_XDECREF(b);                                                                      \
        return out;                                                                         \
    }                                                                                       \
    static Py_hash_t prefix##_hash(PyObject *self) {                                        \
        PyObject *t = prefix##_tuple(self);                                                       \
        if (t == NULL) return -1;                                                           \
        Py_hash_t h = PyObject_Hash(t);                                                     \
        Py_DECREF(t);                                                                       \
        return h;                                                                           \
    }                                                                                       \
    static PyObject *prefix##_repr(PyObject *self) {                                        \
        PyObject *t = prefix##_tuple(self), *f = NULL, *out = NULL;                               \
        if (t != NULL) f = PyUnicode_FromString(fmt);                                       \
        if (f != NULL) out = PyUnicode_Format(f, t);                                        \
        Py_XDECREF(t);                                                                      \
        Py_XDECREF(f);                                                                      \
        return out;                                                                         \
    }                                                                                       \
    static PyObject *prefix##_reduce(PyObject *self, PyObject *Py_UNUSED(ignored)) {        \
        PyObject *type = pickled_as(self), *t = type != NULL ? prefix##_tuple(self) : NULL;  \
        PyObject *out = t != NULL ? Py_BuildValue("(OO)", type, t) : NULL;                   \
        Py_XDECREF(type);                                                                   \
        Py_XDECREF(t);                                                                      \
        return out;                                                                         \
    }

#endif
