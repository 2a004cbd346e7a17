/* membench.run._hitcheck: the run writer's bulk test of a system's hits, in one pass.
 *
 * plain_pairs(hits, known) -> bool
 *
 * True when `hits` is a list or tuple (exactly, not a subclass) whose every element is a
 * tuple or list (exactly) of two items: a str (exactly) that is in the set `known` and is
 * not the atom of an earlier pair (an atom is listed once per query), and a float (exactly)
 * that is finite and either 0 or of magnitude in [1e-4, 1e16). Those are the
 * hits whose run line orjson writes byte for byte as json.dumps does (membench.run.runner's
 * _fast_line and run_line say why). False for anything else, which the runner then checks one
 * hit at a time in Python, naming the first culprit. Nothing about a hit raises here; only an
 * argument of the wrong kind (`known` not a set) is a TypeError.
 *
 * The items are tested with exact-type checks, so no Python code runs but for a set lookup
 * meeting an entry that is not a str with the same hash (the runner's known atom ids are all
 * str); even then the list's size and items are read afresh at each step and the atom is held
 * while it is looked up.
 *
 * Without the extension the runner uses membench.run.runner._plain_pairs_py, six passes in
 * Python that take any object of length 2 for a pair (orjson then refuses what is not a tuple
 * or list). The tests hold both to the bytes json.dumps writes, and this one to accepting no
 * more than the Python one does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

static const double PLAIN_LO = 1e-4;
static const double PLAIN_HI = 1e16;

/* Each atom once per query: a small open-addressing table of the atoms seen so far, keyed by
   the str's own cached hash (computed by the set lookup just before), compared by identity
   first and by value on a hash match. Linear probing in a power-of-two table at most half
   full; on the stack up to STACK_SLOTS slots (hit lists of up to 1,024), else on the heap. */
#define STACK_SLOTS 2048

typedef struct {
    PyObject **slot;
    Py_ssize_t mask;
} Seen;

/* 1 when `atom` was seen before (and records it otherwise), 0 when new, -1 on error */
static inline Py_hash_t
str_hash(PyObject *s)
{
    Py_hash_t h = ((PyASCIIObject *)s)->hash;     /* cached by the set lookup before */
    return h != -1 ? h : PyObject_Hash(s);
}

static int
seen_before(Seen *seen, PyObject *atom)
{
    Py_hash_t h = str_hash(atom);
    if (h == -1)
        return -1;
    Py_ssize_t i = (Py_ssize_t)((size_t)h & (size_t)seen->mask);
    for (;;) {
        PyObject *other = seen->slot[i];
        if (other == NULL) {
            seen->slot[i] = atom;
            return 0;
        }
        if (other == atom)
            return 1;
        if (str_hash(other) == h) {
            int eq = PyUnicode_Compare(other, atom);
            if (eq == -1 && PyErr_Occurred())
                return -1;
            if (eq == 0)
                return 1;
        }
        i = (i + 1) & seen->mask;
    }
}

static PyObject *
plain_pairs(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "plain_pairs(hits, known) takes 2 arguments");
        return NULL;
    }
    PyObject *hits = args[0], *known = args[1];
    if (!PyAnySet_Check(known)) {
        PyErr_SetString(PyExc_TypeError, "plain_pairs: known must be a set");
        return NULL;
    }
    int is_list = PyList_CheckExact(hits);
    if (!is_list && !PyTuple_CheckExact(hits))
        Py_RETURN_FALSE;
    Py_ssize_t n = Py_SIZE(hits), slots = 16;
    while (slots < 2 * n)
        slots <<= 1;
    PyObject *stack[STACK_SLOTS];
    Seen seen = {stack, slots - 1};
    if (slots > STACK_SLOTS) {
        seen.slot = PyMem_Calloc((size_t)slots, sizeof(PyObject *));
        if (seen.slot == NULL)
            return PyErr_NoMemory();
    } else {
        memset(stack, 0, (size_t)slots * sizeof(PyObject *));
    }
    /* Every atom recorded in `seen` is held by `hits` for the whole call: the list is not
       changed while we run (no Python code runs but for a set lookup meeting an entry that
       is not a str with the same hash; the runner's known atom ids are all str), and the
       loop stops at a list shorter than the table was sized for. */
    PyObject *result = Py_False;
    for (Py_ssize_t i = 0; i < Py_SIZE(hits) && i < n; i++) {
        PyObject *hit = is_list ? PyList_GET_ITEM(hits, i) : PyTuple_GET_ITEM(hits, i);
        PyObject *atom, *score;
        if (PyTuple_CheckExact(hit)) {
            if (PyTuple_GET_SIZE(hit) != 2)
                goto done;
            atom = PyTuple_GET_ITEM(hit, 0);
            score = PyTuple_GET_ITEM(hit, 1);
        } else if (PyList_CheckExact(hit)) {
            if (PyList_GET_SIZE(hit) != 2)
                goto done;
            atom = PyList_GET_ITEM(hit, 0);
            score = PyList_GET_ITEM(hit, 1);
        } else {
            goto done;
        }
        if (!PyFloat_CheckExact(score))
            goto done;
        double v = PyFloat_AS_DOUBLE(score);
        if (!isfinite(v))
            goto done;
        double a = fabs(v);
        if (a != 0.0 && !(a >= PLAIN_LO && a < PLAIN_HI))
            goto done;
        if (!PyUnicode_CheckExact(atom))
            goto done;
        Py_INCREF(atom);
        int in = PySet_Contains(known, atom);
        if (in > 0) {
            int again = seen_before(&seen, atom);
            in = again < 0 ? -1 : !again;
        }
        Py_DECREF(atom);
        if (in < 0) {
            result = NULL;
            goto done;
        }
        if (!in)
            goto done;
    }
    if (Py_SIZE(hits) == n)
        result = Py_True;
done:
    if (seen.slot != stack)
        PyMem_Free(seen.slot);
    Py_XINCREF(result);
    return result;
}

static PyMethodDef methods[] = {
    {"plain_pairs", (PyCFunction)(void (*)(void))plain_pairs, METH_FASTCALL,
     "plain_pairs(hits, known) -> bool: every hit an exact (str in known, plain finite "
     "float) pair (module docstring)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_hitcheck",
    "The run writer's one-pass test of a system's hits (see plain_pairs).", -1, methods,
};

PyMODINIT_FUNC
PyInit__hitcheck(void)
{
    return PyModule_Create(&module);
}
