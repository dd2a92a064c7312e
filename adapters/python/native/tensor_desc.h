/*
 * One tensor as a binding hands it over: a description tuple
 * (data pointer, (dtype code, bits), shape, device: -1 for host memory,
 * else the CUDA device), or a tensor object read through torch's protocol
 * (data_ptr(), dtype looked up in the dtypes the binding registered,
 * shape, get_device(): -1 for host memory), which spares the binding
 * building tuples.
 */
#ifndef HOROVOD_NATIVE_TENSOR_DESC_H
#define HOROVOD_NATIVE_TENSOR_DESC_H

#include "native.h"

typedef struct tensor_desc {
  void* data;
  hvd_dl_dtype dtype;
  hvd_device device;
  PyObject* shape; /* owned: a tuple or a tuple subclass */
  Py_ssize_t ndim;
} tensor_desc;

/* 0, or -1 with an exception set; tensor_desc_clear() after a 0. */
int tensor_desc_read(PyObject* tensor, tensor_desc* d);
void tensor_desc_clear(tensor_desc* d);
/* Only the data pointer of `tensor` (a description or a tensor object),
 * for an output made like its input; -1 with an exception set. */
int tensor_desc_data(PyObject* tensor, void** data);
/* shape[i] of a read description into *dim; -1 with an exception set. */
int tensor_desc_dim(const tensor_desc* d, Py_ssize_t i, int64_t* dim);

/* The number of dimensions of `tensor`; -1 with an exception set. */
int tensor_desc_ndim(PyObject* tensor, Py_ssize_t* ndim);
/* Describes `tensor` in *t, its shape written from *next_dim on (which
 * then points past it); -1 with an exception set. */
int tensor_desc_fill(hvd_tensor* t, int64_t** next_dim, PyObject* tensor);

/* set_dtypes(mapping): the module function registering the object
 * protocol's dtypes (framework dtype -> (dtype code, bits)). */
PyObject* tensor_desc_set_dtypes(PyObject* module, PyObject* mapping);
/* Interns the protocol's attribute names; -1 with an exception set. */
int tensor_desc_module_init(void);

#endif
