/* A C-level caller of compiled numba kernels, for the per-call overhead of
 * robot.forward_dynamics(q, v, tau, out=out) and robot.inverse_dynamics(q, v, qdd, out=out).
 *
 * Why: a call through numba's dispatcher costs ~0.4 us for 4-7 array arguments (typing each
 * argument, a runtime record (MemInfo) allocated and freed per array), plus ~0.2 us of the Python
 * method: as much as the whole recursion of a 6-dof arm. A KernelCall checks the four vectors
 * (float64, 1-D, C-contiguous, the right length, out writable) with the NumPy C API and calls the
 * kernel's C entry (a numba @cfunc) with their data pointers: ~0.1 us in all. The same holds
 * for one to three input vectors and a vector or matrix out (mass_matrix(q, out=out)).
 *
 * Anything else (other arguments, keywords, types, shapes, or a non-zero status of the kernel:
 * bad input, aliasing, singular inertia) calls `fallback` (the Python method) with the same
 * arguments, which converts, raises the documented errors, or takes the general path. So a
 * KernelCall never changes a result or an error, only the cost of the common call.
 *
 * The kernel's C signature:
 *     int64 kernel(void **bound, int64 *dims, double *a, double *b, double *c, double *out)
 * (b, c NULL when the kernel takes fewer inputs)
 * bound: data pointers of the arrays the KernelCall holds (the model and workspace of one robot,
 * allocated once, never resized); dims: integers the kernel needs to view them (their shapes).
 * The GIL is held during the call, as for a numba dispatch, so the workspace is never shared by
 * two calls at once.
 *
 * Thread affinity (affine=1, for kernels with per-thread results such as the closed-loop
 * multipliers): only one thread, the first to make a fast call (`owner`), takes the fast path;
 * calls from other threads go to the fallback, which keeps their results apart.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_BOUND 16
#define MAX_DIMS 32
#define N_SPARE 2   /* blocks' reusable result arrays: the caller may hold the previous result */

typedef int64_t (*kernel_t)(void **, int64_t *, double *, double *, double *, double *);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    kernel_t kernel;
    PyObject *bound_arrays;     /* tuple: keeps the bound arrays alive */
    PyObject *fallback;
    void *bound[MAX_BOUND];
    int64_t dims[MAX_DIMS];
    int n_inputs;               /* 1-3 input vectors a[, b[, c]] before out */
    npy_intp lengths[4];        /* lengths of the inputs, then out's rows */
    npy_intp out_cols;          /* 0: out is a vector; else out is (rows, out_cols) */
    uint64_t fast_calls;        /* counters, for tests and benchmarks */
    uint64_t fallback_calls;
    int affine;                 /* 1: only the owner thread takes the fast path */
    unsigned long owner;        /* thread ident of the owner (0: not claimed yet) */
    double *block;              /* blocks(..., out): the kernel's private result (malloc'd) */
    int blocks_form;            /* 1: calling it is blocks(...) (a method replaced on the instance) */
    PyObject *spare[N_SPARE];   /* blocks(...): the last new results' (n, cols, cols) arrays */
    int next_spare;             /* the slot a new array goes to when none can be reused */
} KernelCall;

static PyObject *out_name;      /* interned "out" */

/* The data pointer of `obj` if it is a float64 C-contiguous array of shape (n,) (cols == 0)
 * or (n, cols), writable if asked; else NULL (no exception set). */
static inline double *array_data(PyObject *obj, npy_intp n, npy_intp cols, int writable)
{
    if (!PyArray_CheckExact(obj))
        return NULL;
    PyArrayObject *array = (PyArrayObject *)obj;
    /* the number of dimensions first: a 0-d array has no dimension 0 to read */
    if (cols == 0 ? PyArray_NDIM(array) != 1
                  : (PyArray_NDIM(array) != 2 || PyArray_DIM(array, 1) != cols))
        return NULL;
    if (PyArray_TYPE(array) != NPY_DOUBLE || !PyArray_ISCARRAY_RO(array)
            || !PyArray_ISNOTSWAPPED(array) || PyArray_DIM(array, 0) != n)
        return NULL;
    if (writable && !PyArray_ISWRITEABLE(array))
        return NULL;
    return (double *)PyArray_DATA(array);
}

/* Data pointers of the n_inputs inputs and out (args[n_inputs]) into ptr[0..3] (unused: NULL);
 * 0 when they all fit, -1 otherwise. */
static inline int fill_pointers(KernelCall *self, PyObject *const *args, double **ptr)
{
    ptr[0] = ptr[1] = ptr[2] = NULL;
    for (int i = 0; i < self->n_inputs; i++) {
        ptr[i] = array_data(args[i], self->lengths[i], 0, 0);
        if (ptr[i] == NULL)
            return -1;
    }
    ptr[3] = array_data(args[self->n_inputs], self->lengths[self->n_inputs], self->out_cols, 1);
    return ptr[3] == NULL ? -1 : 0;
}

/* 1 when this thread may take the fast path (affine: the owner, or the first to ask). */
static inline int thread_allowed(KernelCall *self)
{
    if (!self->affine)
        return 1;
    unsigned long me = PyThread_get_thread_ident();
    if (self->owner == me)
        return 1;
    if (self->owner != 0)
        return 0;
    self->owner = me;           /* the GIL is held: no other thread claims it at the same time */
    return 1;
}

static PyObject *call_fallback(KernelCall *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    self->fallback_calls++;
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *KernelCall_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                       PyObject *kwnames)
{
    KernelCall *self = (KernelCall *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    /* the one fast form: f(a[, b[, c]], out=out) */
    if (nargs != self->n_inputs || kwnames == NULL || PyTuple_GET_SIZE(kwnames) != 1)
        return call_fallback(self, args, nargsf, kwnames);
    PyObject *name = PyTuple_GET_ITEM(kwnames, 0);
    if (name != out_name && PyUnicode_Compare(name, out_name) != 0)
        return call_fallback(self, args, nargsf, kwnames);
    double *ptr[4];
    if (fill_pointers(self, args, ptr) != 0 || !thread_allowed(self))
        return call_fallback(self, args, nargsf, kwnames);
    if (self->kernel(self->bound, self->dims, ptr[0], ptr[1], ptr[2], ptr[3]) != 0)
        return call_fallback(self, args, nargsf, kwnames);   /* re-run: raises or converts */
    self->fast_calls++;
    PyObject *out = args[nargs];
    Py_INCREF(out);
    return out;
}

static PyObject *KernelCall_blocks_vectorcall(PyObject *callable, PyObject *const *args,
                                              size_t nargsf, PyObject *kwnames);

static int KernelCall_init(KernelCall *self, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"address", "bound", "dims", "lengths", "fallback", "out_cols",
                               "affine", "blocks", NULL};
    unsigned long long address;
    PyObject *bound, *dims, *lengths, *fallback;
    Py_ssize_t out_cols = 0;
    int affine = 0, blocks_form = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "KO!O!O!O|npp", keywords, &address,
                                     &PyTuple_Type, &bound, &PyTuple_Type, &dims,
                                     &PyTuple_Type, &lengths, &fallback, &out_cols, &affine,
                                     &blocks_form))
        return -1;
    if (address == 0) {
        PyErr_SetString(PyExc_ValueError, "KernelCall: address is 0");
        return -1;
    }
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "KernelCall: fallback must be callable");
        return -1;
    }
    Py_ssize_t n_bound = PyTuple_GET_SIZE(bound), n_dims = PyTuple_GET_SIZE(dims);
    Py_ssize_t n_lengths = PyTuple_GET_SIZE(lengths);
    if (n_bound > MAX_BOUND || n_dims > MAX_DIMS || n_lengths < 2 || n_lengths > 4
            || out_cols < 0) {
        PyErr_SetString(PyExc_ValueError, "KernelCall: too many bound arrays or dims, or "
                                          "lengths is not (1-3 input lengths, out rows)");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n_bound; i++) {
        PyObject *item = PyTuple_GET_ITEM(bound, i);
        if (!PyArray_Check(item) || !PyArray_ISCARRAY((PyArrayObject *)item)) {
            PyErr_Format(PyExc_TypeError, "KernelCall: bound[%zd] is not a C-contiguous "
                                          "writable array", i);
            return -1;
        }
        self->bound[i] = PyArray_DATA((PyArrayObject *)item);
    }
    for (Py_ssize_t i = 0; i < n_dims; i++) {
        self->dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, i));
        if (self->dims[i] == -1 && PyErr_Occurred())
            return -1;
    }
    for (Py_ssize_t i = 0; i < n_lengths; i++) {
        self->lengths[i] = (npy_intp)PyLong_AsSsize_t(PyTuple_GET_ITEM(lengths, i));
        if (self->lengths[i] == -1 && PyErr_Occurred())
            return -1;
    }
    self->n_inputs = (int)n_lengths - 1;
    self->out_cols = (npy_intp)out_cols;
    self->affine = affine;
    self->owner = 0;
    self->kernel = (kernel_t)(uintptr_t)address;
    Py_INCREF(bound);
    Py_XSETREF(self->bound_arrays, bound);
    Py_INCREF(fallback);
    Py_XSETREF(self->fallback, fallback);
    if (blocks_form && (out_cols <= 0 || self->lengths[self->n_inputs] % out_cols != 0)) {
        PyErr_SetString(PyExc_ValueError, "KernelCall: blocks=True needs an out of stacked "
                                          "square matrices (out rows a multiple of out_cols)");
        return -1;
    }
    self->blocks_form = blocks_form;
    self->vectorcall = blocks_form ? KernelCall_blocks_vectorcall : KernelCall_vectorcall;
    PyMem_Free(self->block);    /* blocks' private result, sized for these lengths at first use */
    self->block = NULL;
    for (int k = 0; k < N_SPARE; k++)
        Py_CLEAR(self->spare[k]);
    return 0;
}

static PyObject *KernelCall_call(PyObject *callable, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(callable, args, kwargs);
}

static int KernelCall_traverse(KernelCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->bound_arrays);
    Py_VISIT(self->fallback);
    for (int k = 0; k < N_SPARE; k++)
        Py_VISIT(self->spare[k]);
    return 0;
}

static int KernelCall_clear(KernelCall *self)
{
    Py_CLEAR(self->bound_arrays);
    Py_CLEAR(self->fallback);
    for (int k = 0; k < N_SPARE; k++)
        Py_CLEAR(self->spare[k]);
    return 0;
}

static void KernelCall_dealloc(KernelCall *self)
{
    PyObject_GC_UnTrack(self);
    KernelCall_clear(self);
    PyMem_Free(self->block);
    self->block = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* entry(a[, b[, c]], out) -> status: the kernel's C entry alone, for the Python methods' own
 * fast path (callers that hold the method from before the KernelCall was installed). Same
 * contract as the numba dispatcher it replaces there: TypeError for unfitting arguments. */
static PyObject *KernelCall_entry(KernelCall *self, PyObject *const *args, Py_ssize_t nargs)
{
    double *ptr[4];
    if (nargs != self->n_inputs + 1 || fill_pointers(self, args, ptr) != 0
            || !thread_allowed(self)) {
        PyErr_SetString(PyExc_TypeError, "entry: the arguments must be the inputs and out, "
                                         "float64 C-contiguous arrays of the model's shapes "
                                         "(out writable), from the owner thread if affine");
        return NULL;
    }
    self->fast_calls++;
    return PyLong_FromLongLong(self->kernel(self->bound, self->dims, ptr[0], ptr[1], ptr[2],
                                            ptr[3]));
}

/* 1 when the byte ranges [a, a + na) and [b, b + nb) overlap. */
static inline int overlap(const void *a, size_t na, const void *b, size_t nb)
{
    const char *pa = (const char *)a, *pb = (const char *)b;
    return pa < pb + nb && pb < pa + na;
}

/* 1 when `array` (blocks' last new result, held by nothing else) is still as made: an owned,
 * writable, C-contiguous float64 (n, cols, cols) array with no weak reference (its .base, once
 * reached through a matrix, may have been reshaped or frozen in place). */
static inline int spare_fits(PyArrayObject *array, npy_intp n, npy_intp cols)
{
    return PyArray_NDIM(array) == 3 && PyArray_DIM(array, 0) == n
        && PyArray_DIM(array, 1) == cols && PyArray_DIM(array, 2) == cols
        && PyArray_TYPE(array) == NPY_DOUBLE && PyArray_ISCARRAY(array)
        && PyArray_CHKFLAGS(array, NPY_ARRAY_OWNDATA) && PyArray_BASE(array) == NULL
        && ((PyArrayObject_fields *)array)->weakreflist == NULL;
}

/* blocks(a[, b[, c]][, out]) -> (m0, m1, ...) or None.
 * For an entry whose out is a stack of square matrices, (rows, out_cols) with rows a multiple of
 * out_cols (the derivatives of the dynamics: three (nv, nv) matrices).
 * Without out: runs the kernel into a (rows / out_cols, out_cols, out_cols) array and returns the
 * tuple of its matrices (views of that one array), all in C (from Python the allocation, a 2-D
 * view and three item views cost ~0.6 us). The array is new, or one of the last N_SPARE calls'
 * when nothing else holds that any more (`spare`: then no data is allocated).
 * With out, a tuple of rows / out_cols writable float64 C-contiguous (out_cols, out_cols) arrays
 * whose memory overlaps neither each other nor the inputs: runs the kernel into a private block
 * and copies each matrix into its array (nothing allocated after the first call); returns a
 * tuple of those arrays.
 * None for unfitting arguments (the entry's contract: float64 C-contiguous vectors of the model's
 * lengths, the owner thread if affine; out as above) or a non-zero status: the caller then takes
 * its Python path, which converts or raises. */
static PyObject *KernelCall_blocks(KernelCall *self, PyObject *const *args, Py_ssize_t nargs)
{
    npy_intp cols = self->out_cols, rows = self->lengths[self->n_inputs];
    if (cols <= 0 || rows % cols != 0) {
        PyErr_SetString(PyExc_TypeError, "blocks: needs an entry whose out is a stack of "
                                         "square matrices");
        return NULL;
    }
    npy_intp n_blocks = rows / cols;
    size_t block_bytes = (size_t)cols * (size_t)cols * sizeof(double);
    double *ptr[4] = {NULL, NULL, NULL, NULL};
    if (nargs != self->n_inputs && nargs != self->n_inputs + 1)
        Py_RETURN_NONE;
    for (int i = 0; i < self->n_inputs; i++) {
        ptr[i] = array_data(args[i], self->lengths[i], 0, 0);
        if (ptr[i] == NULL)
            Py_RETURN_NONE;
    }
    if (!thread_allowed(self))
        Py_RETURN_NONE;
    if (nargs == self->n_inputs) {   /* a new result */
        /* one of the last N_SPARE results' arrays again when nothing but this KernelCall holds
         * it any more (its matrices, every view and weak reference of it gone: nobody can see it
         * change; two slots, so that a caller keeping its previous result still reuses), else a
         * new one, kept in a slot for later calls: saves the allocation and release of the data
         * (~0.1 us on a (3, 9, 9) block) */
        PyObject *out = NULL;
        for (int k = 0; k < N_SPARE; k++) {
            PyObject *spare = self->spare[k];
            if (spare != NULL && Py_REFCNT(spare) == 1
                    && spare_fits((PyArrayObject *)spare, n_blocks, cols)) {
                out = spare;
                Py_INCREF(out);
                break;
            }
        }
        if (out == NULL) {
            npy_intp shape[3] = {n_blocks, cols, cols};
            out = PyArray_SimpleNew(3, shape, NPY_DOUBLE);
            if (out == NULL)
                return NULL;
            Py_INCREF(out);
            Py_XSETREF(self->spare[self->next_spare], out);
            self->next_spare = (self->next_spare + 1) % N_SPARE;
        }
        ptr[3] = (double *)PyArray_DATA((PyArrayObject *)out);
        if (self->kernel(self->bound, self->dims, ptr[0], ptr[1], ptr[2], ptr[3]) != 0) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        self->fast_calls++;
        PyObject *result = PyTuple_New(n_blocks);
        if (result == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        /* the matrices as views of `out` built directly (PySequence_GetItem parses an index
         * and goes through the mapping protocol: ~30 ns more per view) */
        npy_intp matrix_shape[2] = {cols, cols};
        for (npy_intp k = 0; k < n_blocks; k++) {
            PyObject *item = PyArray_NewFromDescr(
                &PyArray_Type, PyArray_DescrFromType(NPY_DOUBLE), 2, matrix_shape, NULL,
                ptr[3] + k * cols * cols, NPY_ARRAY_CARRAY, NULL);
            if (item != NULL) {   /* the view keeps `out` alive (SetBaseObject steals one ref) */
                Py_INCREF(out);
                if (PyArray_SetBaseObject((PyArrayObject *)item, out) < 0)
                    Py_CLEAR(item);
            }
            if (item == NULL) {
                Py_DECREF(result);
                Py_DECREF(out);
                return NULL;
            }
            PyTuple_SET_ITEM(result, k, item);
        }
        Py_DECREF(out);
        return result;
    }
    /* out given: a tuple of n_blocks fitting arrays, overlapping nothing */
    PyObject *given = args[self->n_inputs];
    if (!PyTuple_CheckExact(given) || PyTuple_GET_SIZE(given) != n_blocks || n_blocks > 8)
        Py_RETURN_NONE;
    double *outs[8];
    for (npy_intp k = 0; k < n_blocks; k++) {
        outs[k] = array_data(PyTuple_GET_ITEM(given, k), cols, cols, 1);
        if (outs[k] == NULL)
            Py_RETURN_NONE;
        for (npy_intp m = 0; m < k; m++)
            if (overlap(outs[k], block_bytes, outs[m], block_bytes))
                Py_RETURN_NONE;
        for (int i = 0; i < self->n_inputs; i++)
            if (overlap(outs[k], block_bytes, ptr[i], (size_t)self->lengths[i] * sizeof(double)))
                Py_RETURN_NONE;
    }
    if (self->block == NULL) {
        self->block = (double *)PyMem_Malloc(block_bytes * (size_t)n_blocks);
        if (self->block == NULL)
            return PyErr_NoMemory();
    }
    if (self->kernel(self->bound, self->dims, ptr[0], ptr[1], ptr[2], self->block) != 0)
        Py_RETURN_NONE;
    self->fast_calls++;
    PyObject *result = PyTuple_New(n_blocks);
    if (result == NULL)
        return NULL;
    for (npy_intp k = 0; k < n_blocks; k++) {
        memcpy(outs[k], self->block + k * cols * cols, block_bytes);
        PyObject *item = PyTuple_GET_ITEM(given, k);
        Py_INCREF(item);
        PyTuple_SET_ITEM(result, k, item);
    }
    return result;
}

/* The call form of a KernelCall made with blocks=True, installed on a robot in place of a method
 * f(a[, b[, c]], ..., out=None) whose result is a stack of square matrices (the derivatives of
 * the dynamics): f(a[, b[, c]]) and f(a[, b[, c]], out=out) (out None or a tuple, as blocks')
 * run blocks() without entering Python (~0.1 us of two Python frames saved per call); any other
 * form, unfitting argument or non-zero status calls `fallback`, the method, with the same
 * arguments: it converts, raises the documented errors or takes its general path. */
static PyObject *KernelCall_blocks_vectorcall(PyObject *callable, PyObject *const *args,
                                              size_t nargsf, PyObject *kwnames)
{
    KernelCall *self = (KernelCall *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n_kw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs != self->n_inputs || n_kw > 1)
        return call_fallback(self, args, nargsf, kwnames);
    if (n_kw == 1) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, 0);
        if (name != out_name && PyUnicode_Compare(name, out_name) != 0)
            return call_fallback(self, args, nargsf, kwnames);
        if (args[nargs] == Py_None)
            n_kw = 0;   /* out=None: a new result */
    }
    /* args: the inputs, then out's value (the keyword's), as blocks() takes them */
    PyObject *result = KernelCall_blocks(self, args, nargs + n_kw);
    if (result != Py_None)
        return result;   /* the matrices, or NULL with an exception (no memory) */
    Py_DECREF(result);
    return call_fallback(self, args, nargsf, kwnames);
}

/* rk4(q, v, a1, tau, dt, stages, q_next, v_next) -> True, or False (nothing to trust: the
 * caller takes its Python path, which raises the documented error).
 * One classic Runge-Kutta step of a robot whose configuration is a vector space (nq == nv), for
 * a KernelCall of forward_dynamics(q, v, tau, out=out): a1 = f(q, v) is given (the step's first
 * stage), the other three stages call the kernel's C entry directly with tau held. stages: a
 * (7, n) float64 C-contiguous scratch (rows: stage q, v2, v3, v4, a2, a3, a4). The vector
 * updates are those of mbd_ros/kernels/rk4.py in the same operation order, so the result is the
 * same bits as Simulator._rk4's numba path; what it saves is ~10 Python-level calls per step. */
static PyObject *KernelCall_rk4(KernelCall *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || self->n_inputs != 3 || self->out_cols != 0
            || self->lengths[0] != self->lengths[1]) {
        PyErr_SetString(PyExc_TypeError, "rk4(q, v, a1, tau, dt, stages, q_next, v_next) needs "
                                         "a forward-dynamics KernelCall with nq == nv");
        return NULL;
    }
    npy_intp n = self->lengths[1];
    double dt = PyFloat_AsDouble(args[4]);
    if (dt == -1.0 && PyErr_Occurred())
        return NULL;
    double *q = array_data(args[0], n, 0, 0), *v = array_data(args[1], n, 0, 0);
    double *a1 = array_data(args[2], n, 0, 0), *tau = array_data(args[3], n, 0, 0);
    double *stages = array_data(args[5], 7, n, 1);
    double *q_next = array_data(args[6], n, 0, 1), *v_next = array_data(args[7], n, 0, 1);
    if (!q || !v || !a1 || !tau || !stages || !q_next || !v_next || !thread_allowed(self))
        Py_RETURN_FALSE;   /* (affine: another thread owns the kernel's per-thread results) */
    double *qs = stages, *v2 = stages + n, *v3 = stages + 2 * n, *v4 = stages + 3 * n;
    double *a2 = stages + 4 * n, *a3 = stages + 5 * n, *a4 = stages + 6 * n;
    double h = 0.5 * dt;
    /* stage 2: q2 = q + v h, v2 = v + a1 h */
    for (npy_intp i = 0; i < n; i++) { qs[i] = q[i] + v[i] * h; v2[i] = v[i] + a1[i] * h; }
    if (self->kernel(self->bound, self->dims, qs, v2, tau, a2) != 0)
        Py_RETURN_FALSE;
    /* stage 3: q3 = q + v2 h, v3 = v + a2 h */
    for (npy_intp i = 0; i < n; i++) { qs[i] = q[i] + v2[i] * h; v3[i] = v[i] + a2[i] * h; }
    if (self->kernel(self->bound, self->dims, qs, v3, tau, a3) != 0)
        Py_RETURN_FALSE;
    /* stage 4: q4 = q + v3 dt, v4 = v + a3 dt */
    for (npy_intp i = 0; i < n; i++) { qs[i] = q[i] + v3[i] * dt; v4[i] = v[i] + a3[i] * dt; }
    if (self->kernel(self->bound, self->dims, qs, v4, tau, a4) != 0)
        Py_RETURN_FALSE;
    /* q+ = q + (v + 2 v2 + 2 v3 + v4) dt/6, v+ = v + (a1 + 2 a2 + 2 a3 + a4) dt/6 */
    double sixth = 1.0 / 6.0, h6 = dt / 6.0;
    for (npy_intp i = 0; i < n; i++) {
        double s = (((v2[i] + v3[i]) * 2.0 + v[i]) + v4[i]) * sixth;
        q_next[i] = q[i] + s * dt;
        s = (((a2[i] + a3[i]) * 2.0 + a1[i]) + a4[i]) * h6;
        v_next[i] = v[i] + s;
    }
    self->fast_calls += 3;
    Py_RETURN_TRUE;
}

static PyObject *KernelCall_counts(KernelCall *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(KK)", (unsigned long long)self->fast_calls,
                         (unsigned long long)self->fallback_calls);
}

static PyObject *KernelCall_reduce(KernelCall *self, PyObject *Py_UNUSED(ignored))
{
    /* bound to one robot's memory: a copy would write into the original's workspace */
    PyErr_SetString(PyExc_TypeError, "a KernelCall is bound to one robot's arrays and cannot "
                                     "be copied or pickled");
    return NULL;
}

static PyMethodDef KernelCall_methods[] = {
    {"entry", (PyCFunction)(void (*)(void))KernelCall_entry, METH_FASTCALL,
     "entry(a, b, c, out) -> status of the kernel; TypeError for unfitting vectors."},
    {"blocks", (PyCFunction)(void (*)(void))KernelCall_blocks, METH_FASTCALL,
     "blocks(a[, b[, c]][, out]) -> tuple of the square matrices of a new out (or of the "
     "arrays of the tuple out, filled), or None when the caller must take its Python path "
     "(unfitting vectors or out, non-zero status)."},
    {"rk4", (PyCFunction)(void (*)(void))KernelCall_rk4, METH_FASTCALL,
     "rk4(q, v, a1, tau, dt, stages, q_next, v_next) -> True, or False when the caller must "
     "take its Python path: one RK4 step through this forward-dynamics entry (nq == nv)."},
    {"counts", (PyCFunction)KernelCall_counts, METH_NOARGS,
     "(fast calls, fallback calls) so far."},
    {"__reduce__", (PyCFunction)KernelCall_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *KernelCall_fallback(KernelCall *self, void *closure)
{
    Py_INCREF(self->fallback);
    return self->fallback;
}

static PyObject *KernelCall_owner(KernelCall *self, void *closure)
{
    return PyLong_FromUnsignedLong(self->owner);
}

static PyGetSetDef KernelCall_getset[] = {
    {"fallback", (getter)KernelCall_fallback, NULL, "the Python callable of the general case",
     NULL},
    {"owner", (getter)KernelCall_owner, NULL, "affine: the ident (threading.get_ident()) of the "
     "thread that takes the fast path, 0 until one has; 0 for a call of any thread", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject KernelCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mbd_ros.fastcall._fastcall.KernelCall",
    .tp_doc = "KernelCall(address, bound, dims, lengths, fallback, out_cols=0, affine=False): "
              "calls a kernel's C entry for f(a[, b[, c]], out=out) with float64 arrays of the "
              "given shapes (affine: from the first thread that does only), else "
              "fallback(*args, **kwargs).",
    .tp_basicsize = sizeof(KernelCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(KernelCall, vectorcall),
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)KernelCall_init,
    .tp_call = KernelCall_call,
    .tp_traverse = (traverseproc)KernelCall_traverse,
    .tp_clear = (inquiry)KernelCall_clear,
    .tp_dealloc = (destructor)KernelCall_dealloc,
    .tp_methods = KernelCall_methods,
    .tp_getset = KernelCall_getset,
};

/* ---- LinkCall: robot.link_jacobian(q, link[, frame], out=out), link_velocity(q, v, link, ...),
 * link_acceleration(q, v, qdd, link, ...) at C level.
 *
 * Why: the per-(method, link, frame) KernelCalls (robot/frames.py, FrameKinematics.link_call)
 * skip numba's dispatcher, but were reached through the Python method (a frame, a tuple key and
 * a dict lookup, a keyword call): ~0.1-0.15 us of a ~0.3 us call. A LinkCall, installed on the
 * robot instance as the dynamics' KernelCalls are, finds the pair's KernelCall in C (two lookups
 * of interned str keys: table[frame][link]) and runs its fast path directly (the same checks
 * and the same entry, so the same bits; that KernelCall's counters count the call).
 *
 * Fast form: f(a[, b[, c]], link[, frame][, out]) with frame and out also accepted as keywords,
 * link and frame exact str, out given; frame defaults to `default_frame`. Anything else (no out,
 * a (link, frame) pair without a KernelCall yet, other types or shapes, a non-zero status)
 * calls `fallback` (the Python method) with the same arguments: it converts, raises the
 * documented errors, or installs the pair's KernelCall. `table` is owned by Python
 * (FrameKinematics.link_table), which adds pairs under the robot's lock; it is read here with
 * the GIL held, so the lookup and the kernel call are one atomic step for other threads. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *table;            /* dict: frame name -> dict: link name -> KernelCall */
    PyObject *default_frame;    /* str */
    PyObject *fallback;
    int n_inputs;               /* 1-3 input vectors before link */
    uint64_t fast_calls;
    uint64_t fallback_calls;
} LinkCall;

static PyObject *frame_name;    /* interned "frame" */

static inline int name_is(PyObject *name, PyObject *interned)
{
    return name == interned || PyUnicode_Compare(name, interned) == 0;
}

static PyObject *LinkCall_fallback_call(LinkCall *self, PyObject *const *args, size_t nargsf,
                                        PyObject *kwnames)
{
    self->fallback_calls++;
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *LinkCall_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    LinkCall *self = (LinkCall *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int n = self->n_inputs;
    if (nargs < n + 1 || nargs > n + 3)
        return LinkCall_fallback_call(self, args, nargsf, kwnames);
    PyObject *link = args[n];
    PyObject *frame = nargs > n + 1 ? args[n + 1] : NULL;
    PyObject *out = nargs > n + 2 ? args[n + 2] : NULL;
    if (kwnames != NULL) {
        Py_ssize_t n_kw = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t k = 0; k < n_kw; k++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k);
            if (out == NULL && name_is(name, out_name))
                out = args[nargs + k];
            else if (frame == NULL && name_is(name, frame_name))
                frame = args[nargs + k];
            else        /* an unknown or repeated keyword: Python raises its TypeError */
                return LinkCall_fallback_call(self, args, nargsf, kwnames);
        }
    }
    if (frame == NULL)
        frame = self->default_frame;
    if (out == NULL || !PyUnicode_CheckExact(link) || !PyUnicode_CheckExact(frame))
        return LinkCall_fallback_call(self, args, nargsf, kwnames);
    /* str keys: their hash is cached, the lookups cannot raise */
    PyObject *links = PyDict_GetItemWithError(self->table, frame);
    PyObject *target = links != NULL && PyDict_CheckExact(links)
        ? PyDict_GetItemWithError(links, link) : NULL;
    if (target == NULL || !Py_IS_TYPE(target, &KernelCallType)) {
        PyErr_Clear();
        return LinkCall_fallback_call(self, args, nargsf, kwnames);
    }
    KernelCall *call = (KernelCall *)target;
    PyObject *vectors[4];
    for (int i = 0; i < n; i++)
        vectors[i] = args[i];
    vectors[n] = out;
    double *ptr[4];
    if (call->n_inputs != n || fill_pointers(call, vectors, ptr) != 0 || !thread_allowed(call)
            || call->kernel(call->bound, call->dims, ptr[0], ptr[1], ptr[2], ptr[3]) != 0)
        return LinkCall_fallback_call(self, args, nargsf, kwnames);   /* raises or converts */
    call->fast_calls++;
    self->fast_calls++;
    Py_INCREF(out);
    return out;
}

static int LinkCall_init(LinkCall *self, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"table", "n_inputs", "fallback", "default_frame", NULL};
    PyObject *table, *fallback, *default_frame;
    int n_inputs;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!iOU", keywords, &PyDict_Type, &table,
                                     &n_inputs, &fallback, &default_frame))
        return -1;
    if (n_inputs < 1 || n_inputs > 3) {
        PyErr_SetString(PyExc_ValueError, "LinkCall: n_inputs must be 1, 2 or 3");
        return -1;
    }
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "LinkCall: fallback must be callable");
        return -1;
    }
    self->n_inputs = n_inputs;
    Py_INCREF(table);
    Py_XSETREF(self->table, table);
    Py_INCREF(fallback);
    Py_XSETREF(self->fallback, fallback);
    Py_INCREF(default_frame);
    Py_XSETREF(self->default_frame, default_frame);
    self->vectorcall = LinkCall_vectorcall;
    return 0;
}

static PyObject *LinkCall_call(PyObject *callable, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(callable, args, kwargs);
}

static int LinkCall_traverse(LinkCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->table);
    Py_VISIT(self->fallback);
    return 0;
}

static int LinkCall_clear(LinkCall *self)
{
    Py_CLEAR(self->table);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->default_frame);
    return 0;
}

static void LinkCall_dealloc(LinkCall *self)
{
    PyObject_GC_UnTrack(self);
    LinkCall_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *LinkCall_counts(LinkCall *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(KK)", (unsigned long long)self->fast_calls,
                         (unsigned long long)self->fallback_calls);
}

static PyObject *LinkCall_reduce(LinkCall *self, PyObject *Py_UNUSED(ignored))
{
    PyErr_SetString(PyExc_TypeError, "a LinkCall is bound to one robot's arrays and cannot be "
                                     "copied or pickled");
    return NULL;
}

static PyMethodDef LinkCall_methods[] = {
    {"counts", (PyCFunction)LinkCall_counts, METH_NOARGS,
     "(fast calls, fallback calls) so far."},
    {"__reduce__", (PyCFunction)LinkCall_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *LinkCall_get_fallback(LinkCall *self, void *closure)
{
    Py_INCREF(self->fallback);
    return self->fallback;
}

static PyObject *LinkCall_get_table(LinkCall *self, void *closure)
{
    Py_INCREF(self->table);
    return self->table;
}

static PyGetSetDef LinkCall_getset[] = {
    {"fallback", (getter)LinkCall_get_fallback, NULL, "the Python callable of the general case",
     NULL},
    {"table", (getter)LinkCall_get_table, NULL, "{frame: {link: KernelCall}} (shared, owned by "
     "the robot's FrameKinematics)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LinkCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mbd_ros.fastcall._fastcall.LinkCall",
    .tp_doc = "LinkCall(table, n_inputs, fallback, default_frame): f(a[, b[, c]], link[, frame]"
              "[, out]) through the KernelCall table[frame][link] when out is given and the "
              "pair has one, else fallback(*args, **kwargs).",
    .tp_basicsize = sizeof(LinkCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(LinkCall, vectorcall),
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)LinkCall_init,
    .tp_call = LinkCall_call,
    .tp_traverse = (traverseproc)LinkCall_traverse,
    .tp_clear = (inquiry)LinkCall_clear,
    .tp_dealloc = (destructor)LinkCall_dealloc,
    .tp_methods = LinkCall_methods,
    .tp_getset = LinkCall_getset,
};

static struct PyModuleDef fastcall_module = {
    PyModuleDef_HEAD_INIT, "_fastcall",
    "C-level calls of compiled numba kernels (see mbd_ros/fastcall/__init__.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__fastcall(void)
{
    import_array();
    out_name = PyUnicode_InternFromString("out");
    frame_name = PyUnicode_InternFromString("frame");
    if (out_name == NULL || frame_name == NULL || PyType_Ready(&KernelCallType) < 0
            || PyType_Ready(&LinkCallType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&fastcall_module);
    if (module == NULL)
        return NULL;
    Py_INCREF(&KernelCallType);
    if (PyModule_AddObject(module, "KernelCall", (PyObject *)&KernelCallType) < 0) {
        Py_DECREF(&KernelCallType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&LinkCallType);
    if (PyModule_AddObject(module, "LinkCall", (PyObject *)&LinkCallType) < 0) {
        Py_DECREF(&LinkCallType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
