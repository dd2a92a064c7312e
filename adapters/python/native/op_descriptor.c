#include "op_descriptor.h"

#include "tensor_desc.h"

#include <stdlib.h>
#include <string.h>

struct op_descriptor {
  hvd_op op;
  PyObject* name_bytes; /* owns op.name */
  int32_t tensor_count; /* inputs; as many outputs when has_outputs */
  int has_outputs;
  int outputs_like;     /* outputs share their inputs' description */
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

/* The tensors read in full: outputs made like their inputs are not. */
static Py_ssize_t described(const op_request* r, Py_ssize_t inputs,
                            Py_ssize_t total) {
  return r->outputs_like ? inputs : total;
}

static int count_dims(const op_request* r, Py_ssize_t inputs, Py_ssize_t total,
                      Py_ssize_t* dims) {
  *dims = 0;
  for (Py_ssize_t i = 0; i < described(r, inputs, total); ++i) {
    Py_ssize_t ndim = 0;
    if (tensor_desc_ndim(request_tensor(r, inputs, i), &ndim) < 0) return -1;
    *dims += ndim;
  }
  return 0;
}

/* Output `out` made like input `in`: its description, with its own data. */
static int fill_like(hvd_tensor* out, const hvd_tensor* in, PyObject* tensor) {
  *out = *in;
  return tensor_desc_data(tensor, &out->data);
}

static int read_tensors(op_descriptor* d, const op_request* r) {
  Py_ssize_t inputs = 0;
  Py_ssize_t total = tensor_total(r, &inputs);
  Py_ssize_t dims = 0;
  if (total < 0 || count_dims(r, inputs, total, &dims) < 0) return -1;
  d->tensor_count = (int32_t)inputs;
  d->has_outputs = r->outputs != Py_None;
  d->outputs_like = r->outputs_like;
  d->tensors = (hvd_tensor*)calloc((size_t)(total ? total : 1),
                                   sizeof(hvd_tensor));
  d->dims = (int64_t*)malloc(sizeof(int64_t) * (size_t)(dims ? dims : 1));
  if (!d->tensors || !d->dims) {
    PyErr_NoMemory();
    return -1;
  }
  int64_t* next_dim = d->dims;
  for (Py_ssize_t i = 0; i < total; ++i) {
    PyObject* tensor = request_tensor(r, inputs, i);
    int rc = i < described(r, inputs, total)
                 ? tensor_desc_fill(&d->tensors[i], &next_dim, tensor)
                 : fill_like(&d->tensors[i], &d->tensors[i - inputs], tensor);
    if (rc < 0) return -1;
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

/* 1 when `desc` matches `t` but for its data pointer, which `t` then
 * takes; 0 when it differs; -1 on bad input. */
static int refresh_tensor(hvd_tensor* t, const tensor_desc* desc) {
  if (desc->ndim != t->ndim || desc->dtype.code != t->dtype.code ||
      desc->dtype.bits != t->dtype.bits ||
      desc->device.kind != t->device.kind || desc->device.id != t->device.id) {
    return 0;
  }
  for (Py_ssize_t k = 0; k < desc->ndim; ++k) {
    int64_t dim;
    if (tensor_desc_dim(desc, k, &dim) < 0) return -1;
    if (dim != t->shape[k]) return 0;
  }
  t->data = desc->data;
  return 1;
}

int op_descriptor_refresh(op_descriptor* d, const op_request* r) {
  const hvd_op* o = &d->op;
  if (o->collective != r->collective || o->process_set != r->process_set ||
      o->op != r->reduce_op || o->prescale != r->prescale ||
      o->postscale != r->postscale || o->root != r->root ||
      d->has_outputs != (r->outputs != Py_None) ||
      d->outputs_like != r->outputs_like) {
    return 0;
  }
  Py_ssize_t inputs = 0;
  Py_ssize_t total = tensor_total(r, &inputs);
  if (total < 0) return -1;
  if (inputs != d->tensor_count) return 0;
  Py_ssize_t full = described(r, inputs, total);
  for (Py_ssize_t i = 0; i < full; ++i) {
    tensor_desc desc;
    if (tensor_desc_read(request_tensor(r, inputs, i), &desc) < 0) return -1;
    int same = refresh_tensor(&d->tensors[i], &desc);
    tensor_desc_clear(&desc);
    if (same <= 0) return same;
  }
  for (Py_ssize_t i = full; i < total; ++i) {
    if (tensor_desc_data(request_tensor(r, inputs, i), &d->tensors[i].data) <
        0) {
      return -1;
    }
  }
  return same_splits(d, r->splits);
}
