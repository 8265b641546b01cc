/* _native.scan: the event array of a Kineto trace, normalised in one C pass.
 *
 * The native twin of fastload.accept_all over msgspec-decoded events (see fastload.py):
 * it fills an EventSink's lists with exactly the spans, tracks, thread names and [memory]
 * events that path makes (test_analysis_native holds the two equal), without building a
 * struct per event first. It takes a strict subset of JSON: any document it is not sure to
 * read exactly as msgspec does (escaped keys, surrogate escapes, integers beyond 2**53,
 * nesting deeper than 64, invalid UTF-8 in a field that is read, a field of an odd type,
 * invalid JSON anywhere) makes scan() return None, and the caller reads it the msgspec way,
 * which then keeps its own behaviour (skips, errors, the stdlib fallback).
 *
 * An event's "args" object is never decoded here: the span holds a LazyArgs over a Slice
 * into the trace bytes (see _native.c).
 */
#include "_native.h"

/* ---------------------------------------------------------------- interned strings */

enum {
    F_X = 1, F_M = 2, F_I = 4, F_THREAD_NAME = 8, F_MEMORY = 16, F_ANN_PREFIX = 32,
    F_MARKER = 64, F_OVERHEAD = 128, F_LEGACY = 256,
};

typedef struct {
    const char *ptr; /* the raw bytes between the quotes (escapes as written) */
    Py_ssize_t len;
    uint64_t hash;
    PyObject *str;
    int flags;
    int kind; /* the category's kind, -1: not a category the analysis reads */
} Entry;

typedef struct {
    Entry **slots; /* each entry allocated once: pointers to it stay valid as the table grows */
    size_t cap, used;
} Table;

/* What scan() was given: the sink's containers and the constants of normalise.py. */
typedef struct {
    PyObject *lists[12];
    PyObject *track_ids, *track_kinds, *track_keys, *track_first_args;
    PyObject *thread_names, *memory_raw;
    PyObject *category_kind, *legacy_cats, *ann_prefixes, *marker, *overhead_names;
    PyObject *span_type, *lazy_type, *empty, *unset, *decode_any;
    int op_kind, ann_kind, overhead_kind;
    PyObject *pin;
    Table table;
} Ctx;


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

static void table_free(Table *t) {
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

static PyObject *decode_raw(Ctx *c, const char *p, Py_ssize_t n) {
    PyObject *view = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ);
    if (view == NULL) return NULL;
    PyObject *out = PyObject_CallOneArg(c->decode_any, view);
    Py_DECREF(view);
    return out;
}

/* The entry of the string whose raw bytes (between its quotes) are p[0:n]; NULL with
 * *status BAIL (not valid UTF-8, or escapes msgspec may read otherwise) or ERR. */
static Entry *intern(Ctx *c, const char *p, Py_ssize_t n, int escaped, int *status) {
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
        s = decode_raw(c, p - 1, n + 2); /* with its quotes: a JSON string */
        if (s != NULL && !PyUnicode_Check(s)) Py_CLEAR(s);
    } else {
        s = PyUnicode_DecodeUTF8(p, n, "strict");
    }
    if (s == NULL) {
        PyErr_Clear();
        *status = BAIL;
        return NULL;
    }
    Entry *e = PyMem_Calloc(1, sizeof(Entry));
    if (e == NULL) {
        Py_DECREF(s);
        PyErr_NoMemory();
        *status = ERR;
        return NULL;
    }
    t->slots[j] = e;
    e->ptr = p;
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

/* ---------------------------------------------------------------- the JSON reader */

typedef struct {
    const char *p, *end;
} Cur;

#define WS(cur)                                                                           \
    while ((cur)->p < (cur)->end &&                                                       \
           (*(cur)->p == ' ' || *(cur)->p == '\n' || *(cur)->p == '\r' || *(cur)->p == '\t')) \
    (cur)->p++

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Characters that end a run of plain string bytes: the quote, the backslash, controls. */
static unsigned char STOP[256];

void native_scan_init(void) {
    for (int ch = 0; ch < 0x20; ch++) STOP[ch] = 1;
    STOP['"'] = STOP['\\'] = 1;
}

/* A string at cur->p (its opening quote): its raw bytes, and whether it holds escapes. */
static int read_string(Cur *cur, const char **s, Py_ssize_t *n, int *escaped) {
    const unsigned char *p = (const unsigned char *)cur->p + 1;
    const unsigned char *end = (const unsigned char *)cur->end;
    *escaped = 0;
    while (p < end && !STOP[*p]) p++;
    if (p < end && *p == '"') { /* the common case: no escapes */
        *s = cur->p + 1;
        *n = (const char *)p - *s;
        cur->p = (const char *)p + 1;
        return 0;
    }
    const char *q, *cend = cur->end;
    for (;;) {
        q = (const char *)p;
        while (q < cend && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
        if (q >= cend || (unsigned char)*q < 0x20) return BAIL;
        if (*q == '"') {
            *s = cur->p + 1;
            *n = q - *s;
            cur->p = q + 1;
            return 0;
        }
        *escaped = 1; /* a backslash */
        if (q + 1 >= cend) return BAIL;
        switch (q[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p = (const unsigned char *)q + 2;
            break;
        case 'u': {
            if (q + 6 > cend) return BAIL;
            int v = 0;
            for (int i = 2; i < 6; i++) {
                int h = hexval(q[i]);
                if (h < 0) return BAIL;
                v = v * 16 + h;
            }
            if (v >= 0xD800 && v <= 0xDFFF) return BAIL; /* surrogates: msgspec's to judge */
            p = (const unsigned char *)q + 6;
            break;
        }
        default:
            return BAIL;
        }
    }
}


static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number at cur->p. With num NULL it is only checked. Integers beyond 2**53 and floats
 * that overflow make it BAIL where they are read (msgspec keeps big ints exact). */
static int read_number(Cur *cur, Num *num) {
    const char *p = cur->p, *end = cur->end, *start = p;
    int neg = 0, sig = 0, lost = 0, frac = 0, is_int = 1, has_exp = 0;
    unsigned long long mant = 0;
    /* The significant digits (leading zeros left out), up to 19 of them in mant. */
#define DIGIT(ch)                                                                         \
    do {                                                                                  \
        unsigned dgt = (unsigned)((ch) - '0');                                            \
        if (mant != 0 || dgt != 0) {                                                      \
            if (sig < 19) {                                                               \
                mant = mant * 10 + dgt;                                                   \
                sig++;                                                                    \
            } else {                                                                      \
                lost = 1;                                                                 \
            }                                                                             \
        }                                                                                 \
    } while (0)
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end) return BAIL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            DIGIT(*p);
            p++;
        }
    } else {
        return BAIL;
    }
    if (p < end && *p == '.') {
        is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return BAIL;
        while (p < end && *p >= '0' && *p <= '9') {
            DIGIT(*p);
            frac++;
            p++;
        }
    }
#undef DIGIT
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_int = 0;
        has_exp = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return BAIL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    cur->p = p;
    if (num == NULL) return 0;
    num->is_int = is_int;
    if (is_int) {
        if (lost || mant >= (unsigned long long)EXACT) return BAIL;
        num->i = neg ? -(long long)mant : (long long)mant;
        num->d = (double)num->i;
        return 0;
    }
    if (!has_exp && !lost && mant < (unsigned long long)EXACT && frac <= 22) {
        /* Both exact doubles, so one division is the correctly rounded value. */
        double v = (double)mant / POW10[frac];
        num->d = neg ? -v : v;
        return 0;
    }
    char buf[128];
    Py_ssize_t n = p - start;
    if (n >= (Py_ssize_t)sizeof(buf)) return BAIL;
    memcpy(buf, start, n);
    buf[n] = 0;
    double v = PyOS_string_to_double(buf, NULL, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return BAIL;
    }
    if (Py_IS_INFINITY(v)) return BAIL;
    num->d = v;
    return 0;
}

static int skip_value(Cur *cur, int depth);

static int skip_container(Cur *cur, int depth, char close) {
    if (depth > 64) return BAIL;
    cur->p++;
    WS(cur);
    if (cur->p < cur->end && *cur->p == close) {
        cur->p++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            const char *s;
            Py_ssize_t n;
            int esc;
            if (cur->p >= cur->end || *cur->p != '"' || read_string(cur, &s, &n, &esc)) return BAIL;
            WS(cur);
            if (cur->p >= cur->end || *cur->p != ':') return BAIL;
            cur->p++;
            WS(cur);
        }
        if (skip_value(cur, depth + 1)) return BAIL;
        WS(cur);
        if (cur->p >= cur->end) return BAIL;
        if (*cur->p == ',') {
            cur->p++;
            WS(cur);
            continue;
        }
        if (*cur->p != close) return BAIL;
        cur->p++;
        return 0;
    }
}

static int literal(Cur *cur, const char *word, Py_ssize_t n) {
    if (cur->end - cur->p < n || memcmp(cur->p, word, n) != 0) return BAIL;
    cur->p += n;
    return 0;
}

static int skip_value(Cur *cur, int depth) {
    if (cur->p >= cur->end) return BAIL;
    switch (*cur->p) {
    case '{': return skip_container(cur, depth, '}');
    case '[': return skip_container(cur, depth, ']');
    case '"': {
        const char *s;
        Py_ssize_t n;
        int esc;
        return read_string(cur, &s, &n, &esc);
    }
    case 't': return literal(cur, "true", 4);
    case 'f': return literal(cur, "false", 5);
    case 'n': return literal(cur, "null", 4);
    default: return read_number(cur, NULL);
    }
}

/* ---------------------------------------------------------------- one event */

enum { V_ABSENT, V_NULL, V_INT, V_STR };

typedef struct {
    int type;
    long long i;
    Entry *str;
} Id; /* a pid or tid: int, str or null (absent reads as null) */

typedef struct {
    Entry *ph, *cat, *name;
    Id pid, tid;
    int has_ts, has_dur;
    Num ts, dur;
    const char *args; /* the raw args value, NULL when absent */
    Py_ssize_t args_len;
    const char *corr; /* the raw value of args' top-level "correlation" */
    Py_ssize_t corr_len;
} Event;

static int read_str_field(Ctx *c, Cur *cur, Entry **out) {
    const char *s;
    Py_ssize_t n;
    int esc, st = 0;
    if (cur->p >= cur->end || *cur->p != '"' || read_string(cur, &s, &n, &esc)) return BAIL;
    *out = intern(c, s, n, esc, &st);
    return *out == NULL ? st : 0;
}

static int read_id(Ctx *c, Cur *cur, Id *id) {
    if (cur->p >= cur->end) return BAIL;
    char ch = *cur->p;
    if (ch == '"') {
        id->type = V_STR;
        return read_str_field(c, cur, &id->str);
    }
    if (ch == 'n') {
        id->type = V_NULL;
        return literal(cur, "null", 4);
    }
    Num num;
    if (read_number(cur, &num) || !num.is_int) return BAIL; /* a float pid: msgspec refuses */
    id->type = V_INT;
    id->i = num.i;
    return 0;
}

static int read_num_field(Cur *cur, Num *num) {
    if (cur->p >= cur->end || !(*cur->p == '-' || (*cur->p >= '0' && *cur->p <= '9')))
        return BAIL; /* true/false/null/strings: msgspec refuses them for ts and dur */
    return read_number(cur, num);
}

/* The args value: checked whole; for an object, its top-level "correlation" noted. */
static int read_args(Cur *cur, Event *ev) {
    const char *start = cur->p;
    ev->corr = NULL;
    if (cur->p < cur->end && *cur->p == '{') {
        cur->p++;
        WS(cur);
        if (cur->p < cur->end && *cur->p == '}') {
            cur->p++;
        } else {
            for (;;) {
                const char *s;
                Py_ssize_t n;
                int esc;
                if (cur->p >= cur->end || *cur->p != '"' || read_string(cur, &s, &n, &esc))
                    return BAIL;
                if (esc) return BAIL; /* an escaped key could spell "correlation" */
                WS(cur);
                if (cur->p >= cur->end || *cur->p != ':') return BAIL;
                cur->p++;
                WS(cur);
                const char *v = cur->p;
                if (skip_value(cur, 2)) return BAIL;
                if (n == 11 && memcmp(s, "correlation", 11) == 0) {
                    ev->corr = v;
                    ev->corr_len = cur->p - v;
                }
                WS(cur);
                if (cur->p >= cur->end) return BAIL;
                if (*cur->p == ',') {
                    cur->p++;
                    WS(cur);
                    continue;
                }
                if (*cur->p != '}') return BAIL;
                cur->p++;
                break;
            }
        }
    } else if (skip_value(cur, 1)) {
        return BAIL;
    }
    ev->args = start;
    ev->args_len = cur->p - start;
    return 0;
}

#define KEY(lit) (n == sizeof(lit) - 1 && memcmp(s, lit, n) == 0)

static int read_event(Ctx *c, Cur *cur, Event *ev) {
    memset(ev, 0, sizeof(*ev));
    if (cur->p >= cur->end || *cur->p != '{') return BAIL; /* msgspec wants objects */
    cur->p++;
    WS(cur);
    if (cur->p < cur->end && *cur->p == '}') {
        cur->p++;
        return 0;
    }
    for (;;) {
        const char *s;
        Py_ssize_t n;
        int esc, st;
        if (cur->p >= cur->end || *cur->p != '"' || read_string(cur, &s, &n, &esc)) return BAIL;
        if (esc) return BAIL; /* an escaped key could spell a field's name */
        WS(cur);
        if (cur->p >= cur->end || *cur->p != ':') return BAIL;
        cur->p++;
        WS(cur);
        /* Repeated keys: the last one counts, as in msgspec. */
        if (KEY("ph")) st = read_str_field(c, cur, &ev->ph);
        else if (KEY("cat")) st = read_str_field(c, cur, &ev->cat);
        else if (KEY("name")) st = read_str_field(c, cur, &ev->name);
        else if (KEY("pid")) st = read_id(c, cur, &ev->pid);
        else if (KEY("tid")) st = read_id(c, cur, &ev->tid);
        else if (KEY("ts")) { st = read_num_field(cur, &ev->ts); ev->has_ts = 1; }
        else if (KEY("dur")) { st = read_num_field(cur, &ev->dur); ev->has_dur = 1; }
        else if (KEY("args")) st = read_args(cur, ev);
        else st = skip_value(cur, 1);
        if (st) return st;
        WS(cur);
        if (cur->p >= cur->end) return BAIL;
        if (*cur->p == ',') {
            cur->p++;
            WS(cur);
            continue;
        }
        if (*cur->p != '}') return BAIL;
        cur->p++;
        return 0;
    }
}

/* ---------------------------------------------------------------- Python values */

static PyObject *id_obj(const Id *id) {
    if (id->type == V_INT) return PyLong_FromLongLong(id->i);
    if (id->type == V_STR) {
        Py_INCREF(id->str->str);
        return id->str->str;
    }
    Py_RETURN_NONE;
}

static int same_id(const Id *a, const Id *b) {
    int ta = a->type == V_ABSENT ? V_NULL : a->type, tb = b->type == V_ABSENT ? V_NULL : b->type;
    if (ta != tb) return 0;
    if (ta == V_INT) return a->i == b->i;
    if (ta == V_STR) return a->str == b->str;
    return 1;
}

static PyObject *pair(const Event *ev) {
    PyObject *pid = id_obj(&ev->pid), *tid = id_obj(&ev->tid);
    if (pid == NULL || tid == NULL) {
        Py_XDECREF(pid);
        Py_XDECREF(tid);
        return NULL;
    }
    PyObject *key = PyTuple_Pack(2, pid, tid);
    Py_DECREF(pid);
    Py_DECREF(tid);
    return key;
}

/* [memory] and thread_name events; 0, BAIL or ERR. */
static int other_event(Ctx *c, const Event *ev) {
    int ph = ev->ph->flags, name = ev->name ? ev->name->flags : 0;
    if (ev->args == NULL) return 0;
    if ((ph & F_M) && (name & F_THREAD_NAME)) {
        PyObject *a = decode_raw(c, ev->args, ev->args_len);
        if (a == NULL) {
            PyErr_Clear();
            return BAIL;
        }
        PyObject *label = PyDict_Check(a) ? PyDict_GetItemString(a, "name") : NULL;
        int st = 0;
        if (label != NULL && PyUnicode_Check(label)) {
            PyObject *key = pair(ev);
            st = key == NULL || PyDict_SetItem(c->thread_names, key, label) < 0 ? ERR : 0;
            Py_XDECREF(key);
        }
        Py_DECREF(a);
        return st;
    }
    if ((ph & F_I) && (name & F_MEMORY)) {
        PyObject *items[4];
        items[0] = ev->has_ts ? num_obj(&ev->ts) : Py_NewRef(c->unset);
        items[1] = id_obj(&ev->pid);
        items[2] = id_obj(&ev->tid);
        items[3] = decode_raw(c, ev->args, ev->args_len);
        if (items[3] == NULL) {
            PyErr_Clear();
            for (int i = 0; i < 3; i++) Py_XDECREF(items[i]);
            return BAIL;
        }
        if (items[0] == NULL || items[1] == NULL || items[2] == NULL) {
            for (int i = 0; i < 4; i++) Py_XDECREF(items[i]);
            return ERR;
        }
        PyObject *t = PyTuple_New(4);
        if (t == NULL) {
            for (int i = 0; i < 4; i++) Py_DECREF(items[i]);
            return ERR;
        }
        for (int i = 0; i < 4; i++) PyTuple_SET_ITEM(t, i, items[i]);
        int st = t == NULL || PyList_Append(c->memory_raw, t) < 0 ? ERR : 0;
        Py_XDECREF(t);
        return st;
    }
    return 0;
}

typedef struct {
    int has_origin;
    Num origin;
    long long skipped, not_events;
    int legacy;
    Id last_pid, last_tid;
    long last_track;
} State;

/* The args object of a span and its correlation (new references); BAIL/ERR, or 2: skip
 * the event (args neither an object nor null, which msgspec's _Head refuses). */
static int span_args(Ctx *c, const Event *ev, PyObject **args, PyObject **corr) {
    *args = NULL;
    *corr = NULL;
    if (ev->args == NULL || ev->args[0] == 'n') {
        *args = Py_NewRef(c->empty);
        *corr = Py_NewRef(Py_None);
        return 0;
    }
    if (ev->args[0] != '{') return 2;
    if (ev->corr == NULL) {
        *corr = Py_NewRef(Py_None);
    } else {
        Cur cc = {ev->corr, ev->corr + ev->corr_len};
        Num num;
        if (read_number(&cc, &num) == 0 && num.is_int && cc.p == cc.end) {
            *corr = PyLong_FromLongLong(num.i);
        } else {
            *corr = decode_raw(c, ev->corr, ev->corr_len);
            if (*corr == NULL) {
                PyErr_Clear();
                return BAIL;
            }
        }
        if (*corr == NULL) return ERR;
    }
    Slice *sl = PyObject_New(Slice, &SliceType);
    if (sl == NULL) return ERR;
    sl->pin = Py_NewRef(c->pin);
    sl->ptr = ev->args;
    sl->len = ev->args_len;
    PyObject *item = (PyObject *)sl;
    *args = new_tuple((PyTypeObject *)c->lazy_type, &item, 1);
    return *args == NULL ? ERR : 0;
}

/* The track of a span's thread or stream, added on first sight. */
static long track_of(Ctx *c, State *s, const Event *ev, int kind, PyObject *args) {
    if (s->last_track >= 0 && same_id(&ev->tid, &s->last_tid) && same_id(&ev->pid, &s->last_pid))
        return s->last_track;
    PyObject *key = pair(ev);
    if (key == NULL) return -1;
    PyObject *found = PyDict_GetItemWithError(c->track_ids, key);
    long track;
    if (found != NULL) {
        track = PyLong_AsLong(found);
    } else if (PyErr_Occurred()) {
        track = -1;
    } else {
        track = (long)PyList_GET_SIZE(c->track_keys);
        PyObject *idx = PyLong_FromLong(track), *k = PyLong_FromLong(kind);
        if (idx == NULL || k == NULL || PyDict_SetItem(c->track_ids, key, idx) < 0 ||
            PyList_Append(c->track_keys, key) < 0 || PyList_Append(c->track_kinds, k) < 0 ||
            PyList_Append(c->track_first_args, args) < 0)
            track = -1;
        Py_XDECREF(idx);
        Py_XDECREF(k);
    }
    Py_DECREF(key);
    if (track >= 0) {
        s->last_track = track;
        s->last_pid = ev->pid;
        s->last_tid = ev->tid;
    }
    return track;
}

/* One complete ("X") event, as fastload.accept_all takes it; 0, BAIL or ERR. */
static int complete_event(Ctx *c, State *s, const Event *ev) {
    if (ev->has_ts && (too_big(&ev->ts) || (ev->has_dur && too_big(&ev->dur)))) return BAIL;
    if (!s->has_origin && ev->has_ts && in_range(&ev->ts)) {
        s->has_origin = 1;
        s->origin = ev->ts;
    }
    if (ev->cat == NULL) {
        s->skipped++;
        return 0;
    }
    int kind = ev->cat->kind;
    if (kind < 0) return 0;
    if (ev->name == NULL || !ev->has_ts || !s->has_origin) {
        s->skipped++;
        return 0;
    }
    Num start = sub(&ev->ts, &s->origin), end;
    if (ev->has_dur) {
        end = add(&start, &ev->dur);
    } else {
        end.is_int = 0;
        end.d = as_double(&start) + 0.0;
    }
    if (too_big(&start) || too_big(&end)) return BAIL;
    PyObject *args, *corr;
    int st = span_args(c, ev, &args, &corr);
    if (st == 2) {
        s->skipped++;
        return 0;
    }
    if (st) {
        Py_XDECREF(args);
        Py_XDECREF(corr);
        return st;
    }
    if (!(in_range(&start) && num_le(&start, &end) && as_double(&end) < 1e18)) {
        Py_DECREF(args);
        Py_DECREF(corr);
        s->skipped++;
        return 0;
    }
    int cat = ev->cat->flags, name = ev->name->flags;
    if (kind == c->op_kind) {
        if (cat & F_LEGACY) {
            s->legacy = 1;
            if (name & F_ANN_PREFIX) kind = c->ann_kind;
        } else if (name & F_MARKER) {
            kind = c->ann_kind;
        }
    } else if (cat & F_LEGACY) {
        s->legacy = 1;
    }
    if (name & F_OVERHEAD) kind = c->overhead_kind;
    long track = track_of(c, s, ev, kind, args);
    if (track < 0) {
        Py_DECREF(args);
        Py_DECREF(corr);
        return ERR;
    }
    PyObject *items[6] = {num_obj(&start), num_obj(&end), Py_NewRef(ev->name->str),
                          PyLong_FromLong(track), args, corr};
    for (int i = 0; i < 6; i++) {
        if (items[i] == NULL) {
            for (int j = 0; j < 6; j++) Py_XDECREF(items[j]);
            return ERR;
        }
    }
    PyObject *span = new_tuple((PyTypeObject *)c->span_type, items, 6);
    if (span == NULL) return ERR;
    st = PyList_Append(c->lists[kind], span) < 0 ? ERR : 0;
    Py_DECREF(span);
    return st;
}

/* ---------------------------------------------------------------- scan() */

static int scan_array(Ctx *c, State *s, Cur *cur) {
    if (cur->p >= cur->end || *cur->p != '[') return BAIL;
    cur->p++;
    WS(cur);
    if (cur->p < cur->end && *cur->p == ']') return BAIL; /* empty: the caller words it */
    Event ev;
    for (;;) {
        int st = read_event(c, cur, &ev);
        if (st) return st;
        if (ev.ph == NULL) {
            s->not_events++;
        } else if (ev.ph->flags & F_X) {
            st = complete_event(c, s, &ev);
        } else {
            st = other_event(c, &ev);
        }
        if (st) return st;
        WS(cur);
        if (cur->p >= cur->end) return BAIL;
        if (*cur->p == ',') {
            cur->p++;
            WS(cur);
            continue;
        }
        if (*cur->p != ']') return BAIL;
        cur->p++; /* the caller checks what follows (quick_span may have guessed the end) */
        return 0;
    }
}

static int unpack(Ctx *c, PyObject *sink, PyObject *consts) {
    PyObject *lists = PyObject_GetAttrString(sink, "lists");
    if (lists == NULL) return ERR;
    int ok = PyList_Check(lists) && PyList_GET_SIZE(lists) == 12;
    for (int i = 0; ok && i < 12; i++) {
        c->lists[i] = PyList_GET_ITEM(lists, i);
        ok = PyList_Check(c->lists[i]);
    }
    Py_DECREF(lists); /* the sink keeps them alive */
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "sink.lists: 12 lists expected");
        return ERR;
    }
    struct { const char *name; PyObject **slot; } attrs[] = {
        {"track_ids", &c->track_ids}, {"track_kinds", &c->track_kinds},
        {"track_keys", &c->track_keys}, {"track_first_args", &c->track_first_args},
        {"thread_names", &c->thread_names}, {"memory_raw", &c->memory_raw},
    };
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
        PyObject *v = PyObject_GetAttrString(sink, attrs[i].name);
        if (v == NULL) return ERR;
        *attrs[i].slot = v;
        Py_DECREF(v); /* borrowed from the sink, which outlives the scan */
    }
    if (!PyArg_ParseTuple(consts, "O!O!OO!OOOO!Oiii:consts", &PyDict_Type, &c->category_kind,
                          &PyFrozenSet_Type, &c->legacy_cats, &c->ann_prefixes,
                          &PyUnicode_Type, &c->marker, &c->overhead_names, &c->span_type,
                          &c->lazy_type, &PyDict_Type, &c->empty, &c->unset,
                          &c->op_kind, &c->ann_kind, &c->overhead_kind))
        return ERR;
    return 0;
}

static Py_ssize_t last_stop = -1;

PyObject *native_stopped_at(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args)) {
    return PyLong_FromSsize_t(last_stop);
}

PyObject *native_scan(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *data, *sink, *consts, *decode_any;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OnnOOO:scan", &data, &lo, &hi, &sink, &consts, &decode_any))
        return NULL;
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.decode_any = decode_any;
    if (unpack(&c, sink, consts) < 0) return NULL;
    if (!PyType_Check(c.span_type) || !PyType_Check(c.lazy_type)) {
        PyErr_SetString(PyExc_TypeError, "scan: Span and LazyArgs must be types");
        return NULL;
    }
    Pin *pin = PyObject_New(Pin, &PinType);
    if (pin == NULL) return NULL;
    if (PyObject_GetBuffer(data, &pin->view, PyBUF_SIMPLE) < 0) {
        PyObject_Free(pin);
        return NULL;
    }
    c.pin = (PyObject *)pin;
    PyObject *out = NULL;
    if (lo < 0 || hi > pin->view.len || lo >= hi) {
        out = Py_NewRef(Py_None);
    } else {
        Cur cur = {(const char *)pin->view.buf + lo, (const char *)pin->view.buf + hi};
        State s;
        memset(&s, 0, sizeof(s));
        s.last_track = -1;
        int st = scan_array(&c, &s, &cur);
        last_stop = cur.p - (const char *)pin->view.buf;
        if (st == BAIL) {
            out = Py_NewRef(Py_None);
        } else if (st == 0) {
            PyObject *origin = s.has_origin ? num_obj(&s.origin) : Py_NewRef(Py_None);
            if (origin != NULL)
                out = Py_BuildValue("(NLLOn)", origin, s.skipped, s.not_events,
                                    s.legacy ? Py_True : Py_False, last_stop);
        }
    }
    table_free(&c.table);
    Py_DECREF(pin); /* the slices made keep it */
    return out;
}

