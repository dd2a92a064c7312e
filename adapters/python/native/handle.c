#include "handle.h"

typedef struct {
  PyObject_HEAD
  hvd_handle* handle;
} Handle;

static int check_live(Handle* self) {
  if (self->handle) return 0;
  PyErr_SetString(PyExc_ValueError, "the op's handle was already released");
  return -1;
}

static void release(Handle* self) {
  hvd_release(self->handle);
  self->handle = NULL;
}

/* How long one slice of a wait lasts: how late Ctrl-C may be seen. The
 * slices cost nothing measurable (a waiting rank's CPU is tested in
 * tests/torch/stalls and tests/tensorflow/stalls). */
#define WAIT_SLICE_MS 100

/* The op's status, waited for with the GIL released; HVD_ERR_TIMEOUT
 * with *interrupted set when a signal handler raised. */
static hvd_status wait_released(hvd_handle* handle, int* interrupted) {
  hvd_status status = HVD_ERR_TIMEOUT;
  *interrupted = 0;
  for (;;) {
    int32_t done = 0;
    Py_BEGIN_ALLOW_THREADS
    status = hvd_wait(handle, WAIT_SLICE_MS);
    if (status == HVD_ERR_TIMEOUT) {
      /* Done by now: the op's own status (which may be a timeout). */
      hvd_poll(handle, &done);
      if (done) status = hvd_wait(handle, 0);
    }
    Py_END_ALLOW_THREADS
    if (status != HVD_ERR_TIMEOUT || done) return status;
    if (PyErr_CheckSignals() < 0) {
      *interrupted = 1;
      return status;
    }
  }
}

static int finished_with(hvd_handle* handle, hvd_status status,
                         const char* what) {
  if (status == HVD_OK) return 0;
  const char* message = hvd_handle_message(handle);
  if (what) {
    native_raise_for_status(status, what, message);
  } else {
    native_raise_internal(message && *message ? message
                                              : hvd_status_string(status));
  }
  return -1;
}

int native_wait(hvd_handle* handle, const char* what) {
  int32_t finished = 0;
  /* An op already done (most of a step's, by the time they are waited
   * for) gives its own status without releasing the GIL. */
  if (hvd_poll(handle, &finished) == HVD_OK && finished) {
    return finished_with(handle, hvd_wait(handle, 0), what);
  }
  return native_wait_started(handle, what);
}

int native_wait_started(hvd_handle* handle, const char* what) {
  int interrupted = 0;
  hvd_status status = wait_released(handle, &interrupted);
  return interrupted ? -2 : finished_with(handle, status, what);
}

static PyObject* handle_wait(Handle* self, PyObject* args) {
  const char* what = NULL;
  if (!PyArg_ParseTuple(args, "|z:wait", &what) || check_live(self) < 0) {
    return NULL;
  }
  int rc = native_wait(self->handle, what);
  if (rc == 0) Py_RETURN_NONE;
  if (rc == -1) release(self);
  return NULL;
}

static PyObject* handle_poll(Handle* self, PyObject* unused) {
  (void)unused;
  if (check_live(self) < 0) return NULL;
  int32_t done = 0;
  hvd_status status = hvd_poll(self->handle, &done);
  if (status != HVD_OK) {
    return native_raise_for_status(status, "poll", hvd_last_error());
  }
  return PyBool_FromLong(done);
}

static PyObject* handle_release(Handle* self, PyObject* unused) {
  (void)unused;
  release(self);
  Py_RETURN_NONE;
}

static PyObject* shape_tuple(const hvd_tensor* t) {
  PyObject* shape = PyTuple_New(t->ndim);
  for (int32_t i = 0; shape && i < t->ndim; ++i) {
    PyObject* dim = PyLong_FromLongLong(t->shape[i]);
    if (!dim || PyTuple_SetItem(shape, i, dim) < 0) {
      Py_DECREF(shape);
      return NULL;
    }
  }
  return shape;
}

static PyObject* handle_output(Handle* self, PyObject* args) {
  int index;
  if (!PyArg_ParseTuple(args, "i", &index) || check_live(self) < 0) {
    return NULL;
  }
  hvd_tensor out = {0};
  out.struct_size = sizeof out;
  hvd_status status = hvd_handle_output(self->handle, index, &out);
  if (status != HVD_OK) {
    return native_raise_for_status(status, "output", hvd_last_error());
  }
  PyObject* shape = shape_tuple(&out);
  if (!shape) return NULL;
  return Py_BuildValue("(KNK)", (unsigned long long)(uintptr_t)out.data,
                       shape, (unsigned long long)out.byte_offset);
}

static PyObject* handle_received_splits(Handle* self, PyObject* unused) {
  (void)unused;
  if (check_live(self) < 0) return NULL;
  const int32_t* splits = NULL;
  int32_t count = 0;
  if (hvd_handle_received_splits(self->handle, &splits, &count) != HVD_OK) {
    count = 0;
  }
  PyObject* list = PyList_New(count);
  for (int32_t i = 0; list && i < count; ++i) {
    PyObject* v = PyLong_FromLong(splits[i]);
    if (!v || PyList_SetItem(list, i, v) < 0) {
      Py_DECREF(list);
      return NULL;
    }
  }
  return list;
}

static void handle_dealloc(PyObject* self) {
  release((Handle*)self);
  PyTypeObject* type = Py_TYPE(self);
  freefunc free_fn = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_fn(self);
  Py_DECREF(type);
}

static PyMethodDef handle_methods[] = {
    {"wait", (PyCFunction)handle_wait, METH_VARARGS,
     "wait(what=None)\n--\n\nWaits for the op (GIL released, in slices "
     "between which Ctrl-C raises KeyboardInterrupt); when it failed, "
     "releases the handle and raises HorovodInternalError, or with `what` "
     "what raise_for_status raises for a failed call `what`."},
    {"poll", (PyCFunction)handle_poll, METH_NOARGS,
     "poll()\n--\n\nWhether the op has finished."},
    {"release", (PyCFunction)handle_release, METH_NOARGS,
     "release()\n--\n\nReleases the core's handle (also on collection)."},
    {"output", (PyCFunction)handle_output, METH_VARARGS,
     "output(index)\n--\n\nA core-allocated output of a finished op: "
     "(data pointer, shape, byte offset); valid until release."},
    {"received_splits", (PyCFunction)handle_received_splits, METH_NOARGS,
     "received_splits()\n--\n\nalltoall: the rows received from each rank."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, (void*)handle_dealloc},
    {Py_tp_methods, handle_methods},
    {Py_tp_doc, (void*)"An op in flight on the Horovod core."},
    {0, NULL}};

static PyType_Spec handle_spec = {"horovod.common._native.Handle",
                                  sizeof(Handle), 0, Py_TPFLAGS_DEFAULT,
                                  handle_slots};

PyObject* native_handle_type_create(void) {
  return PyType_FromSpec(&handle_spec);
}

PyObject* native_handle_new(PyObject* type, hvd_handle* handle) {
  PyTypeObject* t = (PyTypeObject*)type;
  allocfunc alloc = (allocfunc)PyType_GetSlot(t, Py_tp_alloc);
  Handle* self = (Handle*)alloc(t, 0);
  if (!self) {
    hvd_release(handle);
    return NULL;
  }
  self->handle = handle;
  return (PyObject*)self;
}
