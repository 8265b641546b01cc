/* The scan's reading of one event object: the fields the event model reads, of the types
 * Kineto writes (anything else is BAIL: the reference reader takes the trace), and args
 * left as raw bytes. */
#include "_native_scan.h"

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
    if (read_number(cur, &num) || !num.is_int) return BAIL; /* a float pid: the reference reader's */
    id->type = V_INT;
    id->i = num.i;
    return 0;
}

static int read_num_field(Cur *cur, Num *num) {
    if (cur->p >= cur->end || !(*cur->p == '-' || (*cur->p >= '0' && *cur->p <= '9')))
        return BAIL; /* true/false/null/strings: the reference reader's */
    return read_number(cur, num);
}

/* The args value: checked whole; for an object, the raw values of its top-level span keys
 * (config.keys) noted. */
static int read_args(Cur *cur, Event *ev) {
    const char *start = cur->p;
    int n_keys = config.n_keys;
    for (int k = 0; k < n_keys; k++) ev->key_at[k] = NULL;
    if (cur->p < cur->end && *cur->p == '{') {
        int st = enter(cur, '}');
        while (st == MORE) {
            const char *s;
            Py_ssize_t n;
            int esc;
            if (read_key(cur, &s, &n, &esc) || esc) return BAIL; /* escaped: a span key? */
            const char *v = cur->p;
            if (skip_value(cur, 2)) return BAIL;
            for (int k = 0; k < n_keys; k++) {
                if (n == config.key_len[k] && memcmp(s, config.keys[k], (size_t)n) == 0) {
                    ev->key_at[k] = v;
                    ev->key_len[k] = cur->p - v;
                }
            }
            st = next_item(cur, '}');
        }
        if (st) return st;
    } else if (skip_value(cur, 1)) {
        return BAIL;
    }
    ev->args = start;
    ev->args_len = cur->p - start;
    return 0;
}

#define KEY(lit) (n == sizeof(lit) - 1 && memcmp(s, lit, n) == 0)

int read_event(Ctx *c, Cur *cur, Event *ev) {
    ev->ph = ev->cat = ev->name = NULL; /* not a memset: this runs once per event */
    ev->pid.type = ev->tid.type = V_ABSENT;
    ev->has_ts = ev->has_dur = 0;
    ev->args = NULL;
    if (cur->p >= cur->end || *cur->p != '{') return BAIL; /* not an object: the reference reader's */
    int st = enter(cur, '}');
    while (st == MORE) {
        const char *s;
        Py_ssize_t n;
        int esc;
        if (read_key(cur, &s, &n, &esc) || esc) return BAIL; /* escaped: a field's name? */
        /* Repeated keys: the last one counts, as in stdlib json. */
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
        st = next_item(cur, '}');
    }
    return st;
}

/* An Id as Python holds it: int, str or None. */
PyObject *id_obj(const Id *id) {
    if (id->type == V_INT) return PyLong_FromLongLong(id->i);
    if (id->type == V_STR) {
        Py_INCREF(id->str->str);
        return id->str->str;
    }
    Py_RETURN_NONE;
}

/* (pid, tid): a track's key. */
PyObject *pair(const Event *ev) {
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
