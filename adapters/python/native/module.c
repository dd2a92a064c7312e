/*
 * horovod.common._native: enqueue() and the Handle it returns.
 */
#include "handle.h"
#include "op_descriptor.h"

/* Past this many op names, the cache starts over (names unique per step,
 * e.g. with a counter in them, must not grow it forever). */
#define DESCRIPTOR_CACHE_LIMIT 65536

static PyObject* handle_type;
static PyObject* descriptors; /* op name -> capsule of an op_descriptor */

static const char kCapsuleName[] = "horovod.op_descriptor";

/* ---- errors: horovod.common.exceptions -------------------------------- */

static PyObject* exceptions_attr(const char* name) {
  PyObject* module = PyImport_ImportModule("horovod.common.exceptions");
  if (!module) return NULL;
  PyObject* attr = PyObject_GetAttrString(module, name);
  Py_DECREF(module);
  return attr;
}

PyObject* native_raise_for_status(hvd_status status, const char* what,
                                  const char* message) {
  PyObject* raise = exceptions_attr("raise_for_status");
  if (!raise) return NULL;
  PyObject* result = PyObject_CallFunction(raise, "iss", (int)status, what,
                                           message ? message : "");
  Py_DECREF(raise);
  Py_XDECREF(result);
  if (!PyErr_Occurred()) {
    PyErr_Format(PyExc_RuntimeError, "%s failed: %s", what,
                 hvd_status_string(status));
  }
  return NULL;
}

PyObject* native_raise_internal(const char* message) {
  PyObject* error = exceptions_attr("HorovodInternalError");
  if (!error) return NULL;
  PyErr_SetString(error, message);
  Py_DECREF(error);
  return NULL;
}

/* ---- descriptors by op name -------------------------------------------- */

static void free_capsule(PyObject* capsule) {
  op_descriptor_free(
      (op_descriptor*)PyCapsule_GetPointer(capsule, kCapsuleName));
}

/* The cached descriptor of r->name refreshed for `r`, or a new one stored
 * under the name; borrowed (the cache owns it). */
static op_descriptor* cached_descriptor(const op_request* r) {
  PyObject* capsule = PyDict_GetItem(descriptors, r->name);
  if (capsule) {
    op_descriptor* d =
        (op_descriptor*)PyCapsule_GetPointer(capsule, kCapsuleName);
    int same = op_descriptor_refresh(d, r);
    if (same < 0) return NULL;
    if (same) return d;
  }
  op_descriptor* d = op_descriptor_build(r);
  if (!d) return NULL;
  capsule = PyCapsule_New(d, kCapsuleName, free_capsule);
  if (!capsule) {
    op_descriptor_free(d);
    return NULL;
  }
  if (PyDict_Size(descriptors) >= DESCRIPTOR_CACHE_LIMIT) {
    PyDict_Clear(descriptors);
  }
  int stored = PyDict_SetItem(descriptors, r->name, capsule);
  Py_DECREF(capsule);
  return stored < 0 ? NULL : d;
}

static PyObject* enqueue(PyObject* module, PyObject* args) {
  (void)module;
  op_request r;
  int cache = 0;
  if (!PyArg_ParseTuple(args, "iOpiiddiOOO:enqueue", &r.collective, &r.name,
                        &cache, &r.process_set, &r.reduce_op, &r.prescale,
                        &r.postscale, &r.root, &r.inputs, &r.outputs,
                        &r.splits)) {
    return NULL;
  }
  if (r.name != Py_None && !PyUnicode_Check(r.name)) {
    PyErr_SetString(PyExc_TypeError, "an op's name must be a str or None");
    return NULL;
  }
  /* The GIL stays held: the core copies the op before hvd_enqueue returns,
   * and the cached descriptor is shared by every thread. */
  op_descriptor* fresh = NULL;
  const op_descriptor* d = NULL;
  if (cache && r.name != Py_None) {
    d = cached_descriptor(&r);
  } else {
    d = fresh = op_descriptor_build(&r);
  }
  if (!d) return NULL;
  hvd_handle* handle = NULL;
  hvd_status status = hvd_enqueue(op_descriptor_op(d), &handle);
  op_descriptor_free(fresh);
  if (status != HVD_OK) {
    PyObject* name = r.name != Py_None ? PyUnicode_AsUTF8String(r.name) : NULL;
    PyErr_Clear();
    native_raise_for_status(status, name ? PyBytes_AsString(name) : "enqueue",
                            hvd_last_error());
    Py_XDECREF(name);
    return NULL;
  }
  return native_handle_new(handle_type, handle);
}

static PyMethodDef module_methods[] = {
    {"enqueue", enqueue, METH_VARARGS,
     "enqueue(collective, name, cache, process_set, reduce_op, prescale, "
     "postscale, root, inputs, outputs, splits)\n--\n\n"
     "Starts one collective on the core and returns its Handle. Tensors "
     "are (data pointer, (dtype code, bits), shape, device: -1 for host "
     "memory, else the CUDA device). With cache, the op's descriptor is "
     "kept under its name and reused while later calls describe the same "
     "op. Raises as horovod.common.exceptions.raise_for_status does."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_native",
    "The hot calls of horovod's bindings (enqueue, wait) in C, on CPython's "
    "stable ABI.",
    -1, module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
  PyObject* module = PyModule_Create(&module_def);
  if (!module) return NULL;
  handle_type = native_handle_type_create();
  descriptors = PyDict_New();
  if (!handle_type || !descriptors ||
      PyModule_AddObject(module, "Handle", handle_type) < 0) {
    Py_XDECREF(handle_type);
    Py_XDECREF(descriptors);
    Py_DECREF(module);
    return NULL;
  }
  Py_INCREF(handle_type); /* the module's reference was stolen */
  return module;
}
