#include "given_outputs.h"

#include <stdlib.h>

#include "tensor_desc.h"

struct given_outputs {
  int32_t count;
  hvd_tensor* tensors;
  int64_t* dims;
};

static Py_ssize_t sequence_length(PyObject* seq) {
  if (PyTuple_Check(seq)) return PyTuple_Size(seq);
  if (PyList_Check(seq)) return PyList_Size(seq);
  PyErr_SetString(PyExc_TypeError, "outputs must be a tuple or a list");
  return -1;
}

static PyObject* sequence_item(PyObject* seq, Py_ssize_t i) {
  return PyTuple_Check(seq) ? PyTuple_GetItem(seq, i) : PyList_GetItem(seq, i);
}

void given_outputs_free(given_outputs* g) {
  if (!g) return;
  free(g->tensors);
  free(g->dims);
  free(g);
}

given_outputs* given_outputs_read(PyObject* tensors) {
  Py_ssize_t n = sequence_length(tensors);
  if (n < 0) return NULL;
  Py_ssize_t dims = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_ssize_t ndim = 0;
    if (tensor_desc_ndim(sequence_item(tensors, i), &ndim) < 0) return NULL;
    dims += ndim;
  }
  given_outputs* g = (given_outputs*)calloc(1, sizeof *g);
  if (g) {
    g->count = (int32_t)n;
    g->tensors = (hvd_tensor*)calloc((size_t)(n ? n : 1), sizeof(hvd_tensor));
    g->dims = (int64_t*)malloc(sizeof(int64_t) * (size_t)(dims ? dims : 1));
  }
  if (!g || !g->tensors || !g->dims) {
    given_outputs_free(g);
    return (given_outputs*)PyErr_NoMemory();
  }
  int64_t* next_dim = g->dims;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (tensor_desc_fill(&g->tensors[i], &next_dim, sequence_item(tensors, i)) <
        0) {
      given_outputs_free(g);
      return NULL;
    }
  }
  return g;
}

/* ---- the adapter: called one at a time, from a thread of the core ------- */

static hvd_status allocate_output(void* adapter_ctx, void* op_ctx,
                                  int32_t index, const hvd_tensor* like,
                                  int32_t ndim, const int64_t* shape,
                                  hvd_tensor* out) {
  (void)adapter_ctx;
  (void)like;
  (void)ndim;
  (void)shape;
  const given_outputs* g = (const given_outputs*)op_ctx;
  if (index < 0 || index >= g->count) return HVD_ERR_INVALID_ARGUMENT;
  *out = g->tensors[index]; /* the core checks its shape and dtype */
  return HVD_OK;
}

static void done(void* adapter_ctx, void* op_ctx, hvd_status status,
                 const char* message) {
  (void)adapter_ctx;
  (void)status;
  (void)message;
  given_outputs_free((given_outputs*)op_ctx);
}

static hvd_adapter* registered(void) {
  static hvd_adapter_api api;
  static hvd_adapter* adapter;
  if (adapter) return adapter;
  api.struct_size = sizeof api;
  api.kind = HVD_PLUGIN_ADAPTER;
  api.abi_major = HVD_ABI_VERSION_MAJOR;
  api.abi_minor = HVD_ABI_VERSION_MINOR;
  api.name = "python-given-outputs";
  api.version = "1";
  api.allocate_output = allocate_output;
  api.done = done;
  /* No state of its own beyond op_ctx: any thread of the core may call. */
  api.threading = HVD_THREADING_SERIALIZED;
  hvd_status status = hvd_register_adapter(&api, NULL, &adapter);
  if (status != HVD_OK) {
    adapter = NULL;
    native_raise_for_status(status, "registering the outputs adapter",
                            hvd_last_error());
  }
  return adapter;
}

int given_outputs_attach(hvd_op* op, given_outputs* g) {
  hvd_adapter* adapter = registered(); /* under the GIL: registered once */
  if (!adapter) return -1;
  op->adapter = adapter;
  op->adapter_op = g;
  return 0;
}
