/* A JSON value as a Python object, as stdlib json.loads makes it, for the
 * values it is sure to read the same: objects (the last of a repeated key wins), arrays,
 * strings (escapes decoded; a lone surrogate is stdlib json's to judge), integers below 2**53,
 * floats (correctly rounded, as stdlib json's), true, false, null. Anything else is BAIL and the
 * caller asks stdlib json. */
#include "_native.h"
#include "_native_json.h"

static PyObject *value(Cur *cur, int depth, int *status);

/* Appends the UTF-8 of code point cp to out. */
static char *put_utf8(char *out, unsigned cp) {
    if (cp < 0x80) {
        *out++ = (char)cp;
    } else if (cp < 0x800) {
        *out++ = (char)(0xC0 | (cp >> 6));
        *out++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = (char)(0xE0 | (cp >> 12));
        *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *out++ = (char)(0xF0 | (cp >> 18));
        *out++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    }
    return out;
}

static int hex4(const char *p, const char *end, unsigned *cp) {
    if (end - p < 4) return BAIL;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return BAIL;
        v = v * 16 + (unsigned)h;
    }
    *cp = v;
    return 0;
}

/* The str of a string's raw bytes (between its quotes, escapes as written). */
PyObject *json_str(const char *p, Py_ssize_t n, int escaped, int *status) {
    if (!escaped) {
        PyObject *s = PyUnicode_DecodeUTF8(p, n, "strict");
        if (s == NULL) {
            PyErr_Clear();
            *status = BAIL;
        }
        return s;
    }
    char *buf = PyMem_Malloc(n > 0 ? (size_t)n : 1), *out = buf; /* escapes only shrink */
    if (buf == NULL) {
        *status = ERR;
        return PyErr_NoMemory();
    }
    const char *end = p + n;
    while (p < end) {
        if (*p != '\\') {
            *out++ = *p++;
            continue;
        }
        char e = p[1];
        p += 2;
        switch (e) {
        case 'b': *out++ = '\b'; break;
        case 'f': *out++ = '\f'; break;
        case 'n': *out++ = '\n'; break;
        case 'r': *out++ = '\r'; break;
        case 't': *out++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(p, end, &cp) || (cp >= 0xD800 && cp <= 0xDFFF)) {
                PyMem_Free(buf); /* surrogates (pairs too): stdlib json's to read */
                *status = BAIL;
                return NULL;
            }
            p += 4;
            out = put_utf8(out, cp);
            break;
        }
        default: *out++ = e; /* the quote, the backslash, the slash: read_string checked */
        }
    }
    PyObject *s = PyUnicode_DecodeUTF8(buf, out - buf, "strict");
    PyMem_Free(buf);
    if (s == NULL) {
        PyErr_Clear();
        *status = BAIL;
    }
    return s;
}

/* A container's end: it, or NULL with *status BAIL or ERR (-1: *status says which). */
static PyObject *done(PyObject *container, int st, int *status) {
    if (st == 0) return container;
    if (st == BAIL) *status = BAIL;
    else if (*status != BAIL) *status = ERR;
    Py_XDECREF(container);
    return NULL;
}

static PyObject *string_at(Cur *cur, int *status) {
    const char *s;
    Py_ssize_t n;
    int esc;
    if (read_string(cur, &s, &n, &esc)) {
        *status = BAIL;
        return NULL;
    }
    return json_str(s, n, esc, status);
}

static PyObject *object_at(Cur *cur, int depth, int *status) {
    PyObject *d = PyDict_New();
    int st = d == NULL ? ERR : enter(cur, '}');
    while (st == MORE) {
        const char *s;
        Py_ssize_t n;
        int esc;
        if (read_key(cur, &s, &n, &esc)) {
            st = BAIL;
            break;
        }
        PyObject *key = json_str(s, n, esc, status), *v = NULL;
        if (key != NULL) v = value(cur, depth + 1, status);
        st = v == NULL || PyDict_SetItem(d, key, v) < 0 ? -1 : next_item(cur, '}');
        Py_XDECREF(key);
        Py_XDECREF(v);
    }
    return done(d, st, status);
}

static PyObject *array_at(Cur *cur, int depth, int *status) {
    PyObject *l = PyList_New(0);
    int st = l == NULL ? ERR : enter(cur, ']');
    while (st == MORE) {
        PyObject *v = value(cur, depth + 1, status);
        st = v == NULL || PyList_Append(l, v) < 0 ? -1 : next_item(cur, ']');
        Py_XDECREF(v);
    }
    return done(l, st, status);
}

static PyObject *value(Cur *cur, int depth, int *status) {
    if (depth > 64 || cur->p >= cur->end) {
        *status = BAIL;
        return NULL;
    }
    switch (*cur->p) {
    case '{': return object_at(cur, depth, status);
    case '[': return array_at(cur, depth, status);
    case '"': return string_at(cur, status);
    case 't':
        if (literal(cur, "true", 4) == 0) Py_RETURN_TRUE;
        break;
    case 'f':
        if (literal(cur, "false", 5) == 0) Py_RETURN_FALSE;
        break;
    case 'n':
        if (literal(cur, "null", 4) == 0) Py_RETURN_NONE;
        break;
    default: {
        Num num;
        if (read_number(cur, &num) == 0) {
            PyObject *v = num_obj(&num);
            if (v == NULL) *status = ERR;
            return v;
        }
    }
    }
    *status = BAIL;
    return NULL;
}

PyObject *json_value(const char *p, Py_ssize_t n, int *status) {
    Cur cur = {p, p + n};
    *status = 0;
    WS(&cur);
    PyObject *v = value(&cur, 0, status);
    if (v == NULL) return NULL;
    WS(&cur);
    if (cur.p != cur.end) {
        Py_DECREF(v);
        *status = BAIL;
        return NULL;
    }
    return v;
}

PyObject *json_decode(const char *p, Py_ssize_t n, PyObject *fallback) {
    int status;
    PyObject *out = json_value(p, n, &status);
    if (out != NULL || status == ERR) return out;
    if (fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no decoder to fall back on (configure() sets it)");
        return NULL;
    }
    PyObject *view = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ); /* stdlib json's turn */
    if (view == NULL) return NULL;
    out = PyObject_CallOneArg(fallback, view);
    Py_DECREF(view);
    return out;
}

PyObject *native_loads(PyObject *Py_UNUSED(module), PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    int status;
    PyObject *v = json_value(view.buf, view.len, &status);
    PyBuffer_Release(&view);
    if (v == NULL && status == BAIL)
        PyErr_SetString(PyExc_ValueError, "not a JSON value this decoder takes; ask stdlib json");
    return v;
}
