/*
 * horovod.common._native.Handle: one op in flight on the core. It owns the
 * core's hvd_handle and releases it when released explicitly or collected.
 */
#ifndef HOROVOD_NATIVE_HANDLE_H
#define HOROVOD_NATIVE_HANDLE_H

#include "native.h"

/* Creates the Handle type; NULL with an exception set on failure. */
PyObject* native_handle_type_create(void);
/* A new Handle owning `handle`; releases it and returns NULL on failure. */
PyObject* native_handle_new(PyObject* type, hvd_handle* handle);

/* Waits for `handle` with the GIL released, in slices of 0.1 s between
 * which signal handlers run, so that Ctrl-C raises KeyboardInterrupt
 * promptly: every wait of the Python bindings ends here. A failure raises
 * HorovodInternalError, or with `what` (not NULL) what raise_for_status
 * raises for a failed call `what`. 0 when the op succeeded; -1 when it failed
 * (HorovodInternalError set); -2 when a signal handler raised (the op is
 * still in flight). */
int native_wait(hvd_handle* handle, const char* what);
/* native_wait for an op started a moment ago, which is seldom done yet:
 * without first asking whether it is. */
int native_wait_started(hvd_handle* handle, const char* what);

#endif
