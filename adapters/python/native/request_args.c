#include "request_args.h"

#include <limits.h>

enum { kRequired = 11, kMost = 13 };

static const char* const kNames[kMost] = {
    "collective", "name",      "cache", "process_set", "reduce_op",
    "prescale",   "postscale", "root",  "inputs",      "outputs",
    "splits",     "stream",    "given"};

/* PyArg_ParseTuple's "i": an int (or __index__) within C int's range. */
static int read_int(PyObject* v, const char* fn, int at, int32_t* out) {
  long value = PyLong_AsLong(v);
  if (value == -1 && PyErr_Occurred()) goto fail;
  if (value < INT_MIN || value > INT_MAX) {
    PyErr_Format(PyExc_OverflowError, "%s(): %s %ld is out of range", fn,
                 kNames[at], value);
    return -1;
  }
  *out = (int32_t)value;
  return 0;
fail:
  if (PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Format(PyExc_TypeError, "%s(): %s must be an int", fn, kNames[at]);
  }
  return -1;
}

static int read_double(PyObject* v, const char* fn, int at, double* out) {
  *out = PyFloat_AsDouble(v);
  if (*out != -1.0 || !PyErr_Occurred()) return 0;
  if (PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Format(PyExc_TypeError, "%s(): %s must be a float", fn, kNames[at]);
  }
  return -1;
}

int request_args_read(PyObject* args, const char* fn, op_request* r,
                      int* cache) {
  Py_ssize_t n = PyTuple_Size(args);
  if (n < kRequired || n > kMost) {
    PyErr_Format(PyExc_TypeError, "%s() takes %d to %d arguments (%zd given)",
                 fn, kRequired, kMost, n);
    return -1;
  }
  PyObject* a[kMost];
  for (Py_ssize_t i = 0; i < n; ++i) a[i] = PyTuple_GetItem(args, i);
  if (read_int(a[0], fn, 0, &r->collective) < 0 ||
      read_int(a[3], fn, 3, &r->process_set) < 0 ||
      read_int(a[4], fn, 4, &r->reduce_op) < 0 ||
      read_double(a[5], fn, 5, &r->prescale) < 0 ||
      read_double(a[6], fn, 6, &r->postscale) < 0 ||
      read_int(a[7], fn, 7, &r->root) < 0) {
    return -1;
  }
  *cache = PyObject_IsTrue(a[2]);
  if (*cache < 0) return -1;
  r->name = a[1];
  r->inputs = a[8];
  r->outputs = a[9];
  r->splits = a[10];
  r->stream = 0;
  if (n > 11) {
    r->stream = PyLong_AsUnsignedLongLongMask(a[11]);
    if (r->stream == (unsigned long long)-1 && PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError, "%s(): stream must be an int", fn);
      return -1;
    }
  }
  r->given = n > 12 ? a[12] : Py_None;
  return 0;
}
