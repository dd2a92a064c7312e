#include "tensor_desc.h"

static PyObject* dtypes; /* framework dtype -> (code, bits) */
static PyObject* s_data_ptr;
static PyObject* s_dtype;
static PyObject* s_shape;
static PyObject* s_get_device;

int tensor_desc_module_init(void) {
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  s_dtype = PyUnicode_InternFromString("dtype");
  s_shape = PyUnicode_InternFromString("shape");
  s_get_device = PyUnicode_InternFromString("get_device");
  return s_data_ptr && s_dtype && s_shape && s_get_device ? 0 : -1;
}

PyObject* tensor_desc_set_dtypes(PyObject* module, PyObject* mapping) {
  (void)module;
  if (!PyDict_Check(mapping)) {
    PyErr_SetString(PyExc_TypeError, "set_dtypes takes a dict");
    return NULL;
  }
  PyObject* old = dtypes;
  Py_INCREF(mapping);
  dtypes = mapping;
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

static int read_dtype(PyObject* dtype, tensor_desc* d) {
  if (!PyTuple_Check(dtype) || PyTuple_Size(dtype) != 2) {
    PyErr_SetString(PyExc_TypeError, "a tensor's dtype is (code, bits)");
    return -1;
  }
  long code = PyLong_AsLong(PyTuple_GetItem(dtype, 0));
  long bits = PyLong_AsLong(PyTuple_GetItem(dtype, 1));
  if (PyErr_Occurred()) return -1;
  d->dtype.code = (uint8_t)code;
  d->dtype.bits = (uint8_t)bits;
  d->dtype.lanes = 1;
  return 0;
}

static void set_device(tensor_desc* d, long device) {
  d->device.kind = device < 0 ? HVD_MEM_HOST : HVD_MEM_CUDA;
  d->device.id = device < 0 ? 0 : (int32_t)device;
}

static int read_shape(tensor_desc* d) {
  if (!d->shape || !PyTuple_Check(d->shape)) {
    PyErr_SetString(PyExc_TypeError, "a tensor's shape must be a tuple");
    return -1;
  }
  d->ndim = PyTuple_Size(d->shape);
  return 0;
}

static int read_tuple(PyObject* desc, tensor_desc* d) {
  if (PyTuple_Size(desc) != 4) {
    PyErr_SetString(PyExc_TypeError,
                    "a tensor is described by (data pointer, (dtype code, "
                    "bits), shape, device)");
    return -1;
  }
  PyObject* data = PyTuple_GetItem(desc, 0);
  long device = PyLong_AsLong(PyTuple_GetItem(desc, 3));
  if (device == -1 && PyErr_Occurred()) return -1;
  set_device(d, device);
  d->data = data == Py_None ? NULL : PyLong_AsVoidPtr(data);
  if (PyErr_Occurred() || read_dtype(PyTuple_GetItem(desc, 1), d) < 0) {
    return -1;
  }
  d->shape = PyTuple_GetItem(desc, 2);
  Py_XINCREF(d->shape);
  return read_shape(d);
}

static int unsupported_dtype(PyObject* dtype) {
  PyObject* text = PyObject_Str(dtype);
  if (text) {
    PyErr_Format(PyExc_ValueError, "Tensor type %U is not supported.", text);
    Py_DECREF(text);
  }
  return -1;
}

/* get_device(): -1 for host memory, else the CUDA device; -2 on error. */
static long object_device(PyObject* tensor) {
  PyObject* index = PyObject_CallMethodObjArgs(tensor, s_get_device, NULL);
  if (!index) return -2;
  long device = PyLong_AsLong(index);
  Py_DECREF(index);
  return device == -1 && PyErr_Occurred() ? -2 : device;
}

static int read_object(PyObject* tensor, tensor_desc* d) {
  if (!dtypes) {
    PyErr_SetString(PyExc_TypeError,
                    "a tensor is described by (data pointer, (dtype code, "
                    "bits), shape, device) until set_dtypes() is called");
    return -1;
  }
  PyObject* dtype = PyObject_GetAttr(tensor, s_dtype);
  if (!dtype) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "expected a tensor, got %s",
                 tensor == Py_None ? "None" : "an object without a dtype");
    return -1;
  }
  PyObject* code_bits = PyDict_GetItemWithError(dtypes, dtype);
  if (!code_bits) {
    if (!PyErr_Occurred()) unsupported_dtype(dtype);
    Py_DECREF(dtype);
    return -1;
  }
  Py_DECREF(dtype);
  if (read_dtype(code_bits, d) < 0) return -1;
  long device = object_device(tensor);
  if (device == -2) return -1;
  set_device(d, device);
  PyObject* data = PyObject_CallMethodObjArgs(tensor, s_data_ptr, NULL);
  if (!data) return -1;
  d->data = PyLong_AsVoidPtr(data);
  Py_DECREF(data);
  if (PyErr_Occurred()) return -1;
  d->shape = PyObject_GetAttr(tensor, s_shape);
  return read_shape(d);
}

int tensor_desc_read(PyObject* tensor, tensor_desc* d) {
  d->shape = NULL;
  int rc = PyTuple_Check(tensor) ? read_tuple(tensor, d)
                                 : read_object(tensor, d);
  if (rc < 0) tensor_desc_clear(d);
  return rc;
}

void tensor_desc_clear(tensor_desc* d) { Py_CLEAR(d->shape); }

int tensor_desc_data(PyObject* tensor, void** data) {
  if (PyTuple_Check(tensor)) {
    if (PyTuple_Size(tensor) < 1) {
      PyErr_SetString(PyExc_TypeError, "a tensor's description is empty");
      return -1;
    }
    PyObject* ptr = PyTuple_GetItem(tensor, 0);
    *data = ptr == Py_None ? NULL : PyLong_AsVoidPtr(ptr);
    return PyErr_Occurred() ? -1 : 0;
  }
  PyObject* ptr = PyObject_CallMethodObjArgs(tensor, s_data_ptr, NULL);
  if (!ptr) return -1;
  *data = PyLong_AsVoidPtr(ptr);
  Py_DECREF(ptr);
  return PyErr_Occurred() ? -1 : 0;
}

int tensor_desc_dim(const tensor_desc* d, Py_ssize_t i, int64_t* dim) {
  *dim = PyLong_AsLongLong(PyTuple_GetItem(d->shape, i));
  return *dim == -1 && PyErr_Occurred() ? -1 : 0;
}

int tensor_desc_ndim(PyObject* tensor, Py_ssize_t* ndim) {
  tensor_desc t;
  if (tensor_desc_read(tensor, &t) < 0) return -1;
  *ndim = t.ndim;
  tensor_desc_clear(&t);
  return 0;
}

int tensor_desc_fill(hvd_tensor* t, int64_t** next_dim, PyObject* tensor) {
  tensor_desc desc;
  if (tensor_desc_read(tensor, &desc) < 0) return -1;
  t->struct_size = sizeof *t;
  t->data = desc.data;
  t->device = desc.device;
  t->ndim = (int32_t)desc.ndim;
  t->dtype = desc.dtype;
  t->shape = desc.ndim ? *next_dim : NULL;
  int rc = 0;
  for (Py_ssize_t k = 0; rc == 0 && k < desc.ndim; ++k) {
    rc = tensor_desc_dim(&desc, k, (*next_dim)++);
  }
  tensor_desc_clear(&desc);
  return rc;
}
