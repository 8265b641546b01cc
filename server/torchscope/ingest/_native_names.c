/* _native.scan's strings: one Python str per distinct raw string of the trace (names,
 * categories, string ids), found by its bytes, with what the per-event logic asks of it
 * (is it "X", a known category, an annotation prefix, …) worked out once. */
#include "_native_scan.h"

/* A hash of the first and last 16 bytes and the length: names differ early or late, and
 * equal hashes are compared whole anyway. */
static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ULL, w;
    Py_ssize_t k = n < 16 ? n : 16;
    for (Py_ssize_t i = 0; i + 8 <= k; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001B3ULL;
        h ^= h >> 29;
    }
    for (Py_ssize_t i = k & ~(Py_ssize_t)7; i < k; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001B3ULL;
    if (n > 16) {
        for (Py_ssize_t i = n - 16; i < n; i += 8) {
            memcpy(&w, p + i, 8);
            h = (h ^ w) * 0x100000001B3ULL;
            h ^= h >> 29;
        }
    }
    return h ^ (h >> 32);
}

static int table_grow(Table *t) {
    size_t cap = t->cap ? t->cap * 2 : 1024;
    Entry **slots = PyMem_Calloc(cap, sizeof(Entry *));
    if (slots == NULL) {
        PyErr_NoMemory();
        return ERR;
    }
    for (size_t i = 0; i < t->cap; i++) {
        Entry *e = t->slots[i];
        if (e == NULL) continue;
        size_t j = e->hash & (cap - 1);
        while (slots[j] != NULL) j = (j + 1) & (cap - 1);
        slots[j] = e;
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

void table_free(Table *t) {
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i] != NULL) {
            Py_XDECREF(t->slots[i]->str);
            PyMem_Free(t->slots[i]);
        }
    }
    PyMem_Free(t->slots);
    t->slots = NULL;
    t->cap = t->used = 0;
}

static int starts_with(PyObject *str, PyObject *prefix) {
    PyObject *r = PyObject_CallMethod(str, "startswith", "(O)", prefix);
    if (r == NULL) return ERR;
    int yes = PyObject_IsTrue(r);
    Py_DECREF(r);
    return yes;
}

static int eq_ascii(PyObject *str, const char *s) {
    return PyUnicode_CompareWithASCIIString(str, s) == 0;
}

/* The flags of a newly seen string: what the per-event logic asks of it. */
static int entry_flags(Ctx *c, Entry *e) {
    PyObject *s = e->str;
    int f = 0, r;
    if (eq_ascii(s, "X")) f |= F_X;
    if (eq_ascii(s, "M")) f |= F_M;
    if (eq_ascii(s, "i")) f |= F_I;
    if (eq_ascii(s, "thread_name")) f |= F_THREAD_NAME;
    if (eq_ascii(s, "[memory]")) f |= F_MEMORY;
    if ((r = starts_with(s, c->ann_prefixes)) < 0) return ERR;
    if (r) f |= F_ANN_PREFIX;
    if ((r = starts_with(s, c->marker)) < 0) return ERR;
    if (r) f |= F_MARKER;
    if ((r = PySet_Contains(c->overhead_names, s)) < 0) return ERR;
    if (r) f |= F_OVERHEAD;
    if ((r = PySet_Contains(c->legacy_cats, s)) < 0) return ERR;
    if (r) f |= F_LEGACY;
    PyObject *kind = PyDict_GetItemWithError(c->category_kind, s);
    if (kind == NULL && PyErr_Occurred()) return ERR;
    e->kind = kind == NULL ? -1 : (int)PyLong_AsLong(kind);
    e->flags = f;
    return 0;
}

/* The entry of the string whose raw bytes (between its quotes) are p[0:n]; NULL with
 * *status BAIL (not valid UTF-8, or escapes stdlib json may read otherwise) or ERR. */
Entry *intern(Ctx *c, const char *p, Py_ssize_t n, int escaped, int *status) {
    Table *t = &c->table;
    if ((t->used + 1) * 2 > t->cap && table_grow(t) < 0) {
        *status = ERR;
        return NULL;
    }
    uint64_t h = hash_bytes(p, n);
    size_t j = h & (t->cap - 1);
    for (;;) {
        Entry *e = t->slots[j];
        if (e == NULL) break;
        if (e->hash == h && e->len == n && memcmp(e->ptr, p, n) == 0) return e;
        j = (j + 1) & (t->cap - 1);
    }
    PyObject *s;
    if (escaped) {
        s = json_decode(p - 1, n + 2, c->decode_any); /* with its quotes: a JSON string */
        if (s != NULL && !PyUnicode_Check(s)) Py_CLEAR(s);
    } else {
        s = PyUnicode_DecodeUTF8(p, n, "strict");
    }
    if (s == NULL) {
        PyErr_Clear();
        *status = BAIL;
        return NULL;
    }
    /* The entry keeps a copy of the bytes: a streaming scan reuses its window. */
    Entry *e = PyMem_Malloc(sizeof(Entry) + (size_t)n);
    if (e == NULL) {
        Py_DECREF(s);
        PyErr_NoMemory();
        *status = ERR;
        return NULL;
    }
    t->slots[j] = e;
    memcpy((char *)(e + 1), p, (size_t)n);
    e->ptr = (const char *)(e + 1);
    e->len = n;
    e->hash = h;
    e->str = s;
    t->used++;
    if (entry_flags(c, e) < 0) {
        *status = ERR;
        return NULL;
    }
    return e;
}

