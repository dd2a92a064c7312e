/*
 * The hot calls of horovod's Python bindings, on CPython's stable ABI
 * (Py_LIMITED_API 3.8: one build serves every CPython 3.8+). Framework
 * free: bindings describe tensors as plain tuples.
 */
#ifndef HOROVOD_NATIVE_H
#define HOROVOD_NATIVE_H

#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x03080000
#include <Python.h>

#include "horovod/horovod.h"

/* Raises horovod.common.exceptions' exception for a failed call `what`
 * (raise_for_status); returns NULL. */
PyObject* native_raise_for_status(hvd_status status, const char* what,
                                  const char* message);
/* Raises HorovodInternalError(message); returns NULL. */
PyObject* native_raise_internal(const char* message);

#endif
