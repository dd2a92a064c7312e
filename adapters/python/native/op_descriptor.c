#include "op_descriptor.h"

#include <stdlib.h>
#include <string.h>

struct op_descriptor {
  hvd_op op;
  PyObject* name_bytes; /* owns op.name */
  int32_t tensor_count; /* inputs; as many outputs when has_outputs */
  int has_outputs;
  hvd_tensor* tensors;  /* inputs, then outputs */
  int64_t* dims;        /* every tensor's shape, in order */
  int32_t* splits;
};

/* ---- tuples and lists ---------------------------------------------------- */

static Py_ssize_t sequence_length(PyObject* seq, const char* what) {
  if (PyTuple_Check(seq)) return PyTuple_Size(seq);
  if (PyList_Check(seq)) return PyList_Size(seq);
  PyErr_Format(PyExc_TypeError, "%s must be a tuple or a list", what);
  return -1;
}

/* Borrowed. */
static PyObject* sequence_item(PyObject* seq, Py_ssize_t i) {
  return PyTuple_Check(seq) ? PyTuple_GetItem(seq, i) : PyList_GetItem(seq, i);
}

/* ---- one tensor description ---------------------------------------------- */

typedef struct tensor_fields {
  void* data;
  hvd_dl_dtype dtype;
  hvd_device device;
  PyObject* shape; /* borrowed tuple */
  Py_ssize_t ndim;
} tensor_fields;

static int read_tensor(PyObject* desc, tensor_fields* f) {
  if (!PyTuple_Check(desc) || PyTuple_Size(desc) != 4) {
    PyErr_SetString(PyExc_TypeError,
                    "a tensor is described by (data pointer, (dtype code, "
                    "bits), shape, device)");
    return -1;
  }
  PyObject* data = PyTuple_GetItem(desc, 0);
  PyObject* dtype = PyTuple_GetItem(desc, 1);
  f->shape = PyTuple_GetItem(desc, 2);
  long device = PyLong_AsLong(PyTuple_GetItem(desc, 3));
  if (device == -1 && PyErr_Occurred()) return -1;
  f->data = data == Py_None ? NULL : PyLong_AsVoidPtr(data);
  if (PyErr_Occurred()) return -1;
  if (!PyTuple_Check(dtype) || PyTuple_Size(dtype) != 2) {
    PyErr_SetString(PyExc_TypeError, "a tensor's dtype is (code, bits)");
    return -1;
  }
  long code = PyLong_AsLong(PyTuple_GetItem(dtype, 0));
  long bits = PyLong_AsLong(PyTuple_GetItem(dtype, 1));
  if (PyErr_Occurred()) return -1;
  f->dtype.code = (uint8_t)code;
  f->dtype.bits = (uint8_t)bits;
  f->dtype.lanes = 1;
  f->device.kind = device < 0 ? HVD_MEM_HOST : HVD_MEM_CUDA;
  f->device.id = device < 0 ? 0 : (int32_t)device;
  if (!PyTuple_Check(f->shape)) {
    PyErr_SetString(PyExc_TypeError, "a tensor's shape must be a tuple");
    return -1;
  }
  f->ndim = PyTuple_Size(f->shape);
  return 0;
}

static int read_dim(PyObject* shape, Py_ssize_t i, int64_t* dim) {
  *dim = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
  return *dim == -1 && PyErr_Occurred() ? -1 : 0;
}

/* ---- the request's tensors, in order: inputs then outputs --------------- */

static Py_ssize_t tensor_total(const op_request* r, Py_ssize_t* inputs) {
  *inputs = sequence_length(r->inputs, "inputs");
  if (*inputs < 0) return -1;
  if (r->outputs == Py_None) return *inputs;
  Py_ssize_t outputs = sequence_length(r->outputs, "outputs");
  if (outputs < 0) return -1;
  if (outputs != *inputs) {
    PyErr_Format(PyExc_ValueError, "%zd outputs for %zd inputs", outputs,
                 *inputs);
    return -1;
  }
  return 2 * *inputs;
}

static PyObject* request_tensor(const op_request* r, Py_ssize_t inputs,
                                Py_ssize_t i) {
  return i < inputs ? sequence_item(r->inputs, i)
                    : sequence_item(r->outputs, i - inputs);
}

/* ---- build ---------------------------------------------------------------- */

static int read_splits(op_descriptor* d, PyObject* splits) {
  if (splits == Py_None) return 0;
  Py_ssize_t n = sequence_length(splits, "splits");
  if (n < 0) return -1;
  d->splits = (int32_t*)malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  if (!d->splits) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    long v = PyLong_AsLong(sequence_item(splits, i));
    if (v == -1 && PyErr_Occurred()) return -1;
    d->splits[i] = (int32_t)v;
  }
  d->op.splits = d->splits;
  d->op.split_count = (int32_t)n;
  return 0;
}

static int read_tensors(op_descriptor* d, const op_request* r) {
  Py_ssize_t inputs = 0;
  Py_ssize_t total = tensor_total(r, &inputs);
  if (total < 0) return -1;
  d->tensor_count = (int32_t)inputs;
  d->has_outputs = r->outputs != Py_None;
  d->tensors = (hvd_tensor*)calloc((size_t)(total ? total : 1),
                                   sizeof(hvd_tensor));
  Py_ssize_t dims = 0;
  tensor_fields f;
  for (Py_ssize_t i = 0; i < total; ++i) {
    if (read_tensor(request_tensor(r, inputs, i), &f) < 0) return -1;
    dims += f.ndim;
  }
  d->dims = (int64_t*)malloc(sizeof(int64_t) * (size_t)(dims ? dims : 1));
  if (!d->tensors || !d->dims) {
    PyErr_NoMemory();
    return -1;
  }
  int64_t* next_dim = d->dims;
  for (Py_ssize_t i = 0; i < total; ++i) {
    read_tensor(request_tensor(r, inputs, i), &f);
    hvd_tensor* t = &d->tensors[i];
    t->struct_size = sizeof *t;
    t->data = f.data;
    t->device = f.device;
    t->ndim = (int32_t)f.ndim;
    t->dtype = f.dtype;
    t->shape = f.ndim ? next_dim : NULL;
    for (Py_ssize_t k = 0; k < f.ndim; ++k) {
      if (read_dim(f.shape, k, next_dim++) < 0) return -1;
    }
  }
  d->op.tensor_count = d->tensor_count;
  d->op.inputs = inputs ? d->tensors : NULL;
  d->op.outputs = d->has_outputs ? d->tensors + inputs : NULL;
  return 0;
}

op_descriptor* op_descriptor_build(const op_request* r) {
  op_descriptor* d = (op_descriptor*)calloc(1, sizeof *d);
  if (!d) return (op_descriptor*)PyErr_NoMemory();
  d->op.struct_size = sizeof d->op;
  d->op.collective = r->collective;
  d->op.process_set = r->process_set;
  d->op.op = r->reduce_op;
  d->op.prescale = r->prescale;
  d->op.postscale = r->postscale;
  d->op.root = r->root;
  if (r->name != Py_None) {
    d->name_bytes = PyUnicode_AsUTF8String(r->name);
    if (!d->name_bytes) goto fail;
    d->op.name = PyBytes_AsString(d->name_bytes);
  }
  if (read_tensors(d, r) < 0 || read_splits(d, r->splits) < 0) goto fail;
  return d;
fail:
  op_descriptor_free(d);
  return NULL;
}

void op_descriptor_free(op_descriptor* d) {
  if (!d) return;
  Py_XDECREF(d->name_bytes);
  free(d->tensors);
  free(d->dims);
  free(d->splits);
  free(d);
}

const hvd_op* op_descriptor_op(const op_descriptor* d) { return &d->op; }

/* ---- reuse ---------------------------------------------------------------- */

static int same_splits(const op_descriptor* d, PyObject* splits) {
  if (splits == Py_None) return d->splits == NULL;
  if (!d->splits) return 0;
  Py_ssize_t n = sequence_length(splits, "splits");
  if (n < 0) return -1;
  if (n != d->op.split_count) return 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    long v = PyLong_AsLong(sequence_item(splits, i));
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v != d->splits[i]) return 0;
  }
  return 1;
}

int op_descriptor_refresh(op_descriptor* d, const op_request* r) {
  const hvd_op* o = &d->op;
  if (o->collective != r->collective || o->process_set != r->process_set ||
      o->op != r->reduce_op || o->prescale != r->prescale ||
      o->postscale != r->postscale || o->root != r->root ||
      d->has_outputs != (r->outputs != Py_None)) {
    return 0;
  }
  Py_ssize_t inputs = 0;
  Py_ssize_t total = tensor_total(r, &inputs);
  if (total < 0) return -1;
  if (inputs != d->tensor_count) return 0;
  tensor_fields f;
  for (Py_ssize_t i = 0; i < total; ++i) {
    if (read_tensor(request_tensor(r, inputs, i), &f) < 0) return -1;
    hvd_tensor* t = &d->tensors[i];
    if (f.ndim != t->ndim || f.dtype.code != t->dtype.code ||
        f.dtype.bits != t->dtype.bits || f.device.kind != t->device.kind ||
        f.device.id != t->device.id) {
      return 0;
    }
    for (Py_ssize_t k = 0; k < f.ndim; ++k) {
      int64_t dim;
      if (read_dim(f.shape, k, &dim) < 0) return -1;
      if (dim != t->shape[k]) return 0;
    }
    t->data = f.data;
  }
  return same_splits(d, r->splits);
}
