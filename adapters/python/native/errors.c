/*
 * The bindings' errors: horovod.common.exceptions' types, raised from C
 * (native.h).
 */
#include "native.h"

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
