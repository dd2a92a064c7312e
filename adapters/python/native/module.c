/*
 * horovod.common._native: enqueue() and the Handle it returns; run()
 * (enqueue and wait), enqueue_each() (one op per tensor), and the
 * process-set changes started as Handles.
 */
#include "given_outputs.h"
#include "handle.h"
#include "op_descriptor.h"
#include "request_args.h"
#include "tensor_desc.h"

/* Past this many op names, the cache starts over (names unique per step,
 * e.g. with a counter in them, must not grow it forever). */
#define DESCRIPTOR_CACHE_LIMIT 65536

static PyObject* handle_type;
static PyObject* descriptors; /* op name -> capsule of an op_descriptor */

static const char kCapsuleName[] = "horovod.op_descriptor";

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

/* Re-raises the pending exception as the same type, its message prefixed
 * with the op's name. */
static void name_the_error(const op_request* r) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* message = value ? PyObject_Str(value) : NULL;
  if (message && r->name != Py_None) {
    PyErr_Format(type, "%U: %U", r->name, message);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
  } else {
    PyErr_Restore(type, value, traceback);
  }
  Py_XDECREF(message);
}

/* The op name a failed call names: its own, else what it did. */
static PyObject* name_bytes_or(const op_request* r, const char* what) {
  PyObject* name =
      r->name != Py_None ? PyUnicode_AsUTF8String(r->name) : NULL;
  if (!name) {
    PyErr_Clear();
    name = PyBytes_FromString(what);
  }
  return name;
}

/* Starts `r` on the core into *handle; -1 with an exception set. The GIL
 * stays held: the core copies the op before hvd_enqueue returns, and the
 * cached descriptor is shared by every thread. */
static int start(const op_request* r, int cache, hvd_handle** handle) {
  if (r->name != Py_None && !PyUnicode_Check(r->name)) {
    PyErr_SetString(PyExc_TypeError, "an op's name must be a str or None");
    return -1;
  }
  op_descriptor* fresh = NULL;
  const op_descriptor* d = NULL;
  if (cache && r->name != Py_None) {
    d = cached_descriptor(r);
  } else {
    d = fresh = op_descriptor_build(r);
  }
  if (!d) {
    name_the_error(r);
    return -1;
  }
  hvd_op op = *op_descriptor_op(d); /* its tensors stay d's */
  op.stream = (hvd_stream)(uintptr_t)r->stream;
  given_outputs* given = NULL;
  if (r->given != Py_None) {
    given = given_outputs_read(r->given);
    if (!given || given_outputs_attach(&op, given) < 0) {
      given_outputs_free(given);
      op_descriptor_free(fresh);
      name_the_error(r);
      return -1;
    }
  }
  hvd_status status = hvd_enqueue(&op, handle);
  op_descriptor_free(fresh);
  if (status != HVD_OK) given_outputs_free(given); /* no done() comes */
  if (status == HVD_OK) return 0;
  PyObject* name = name_bytes_or(r, "enqueue");
  native_raise_for_status(status, name ? PyBytes_AsString(name) : "enqueue",
                          hvd_last_error());
  Py_XDECREF(name);
  return -1;
}

/* Outputs are tensors or None; run() alone also takes a function that
 * makes them. */
static int refuse_made_outputs(PyObject* outputs, const char* fn) {
  if (outputs == Py_None || !PyCallable_Check(outputs)) return 0;
  PyErr_Format(PyExc_TypeError,
               "%s: outputs are a tuple or a list of tensors, or None "
               "(run() alone makes them)", fn);
  return -1;
}

static PyObject* enqueue(PyObject* module, PyObject* args) {
  (void)module;
  op_request r = {0};
  int cache = 0;
  hvd_handle* handle = NULL;
  if (request_args_read(args, "enqueue", &r, &cache) < 0 ||
      refuse_made_outputs(r.outputs, "enqueue") < 0 ||
      start(&r, cache, &handle) < 0) {
    return NULL;
  }
  return native_handle_new(handle_type, handle);
}

/* A tuple of make(input) for each input; NULL with an exception set. */
static PyObject* make_outputs(PyObject* make, PyObject* inputs) {
  if (!PyTuple_Check(inputs) && !PyList_Check(inputs)) {
    PyErr_SetString(PyExc_TypeError, "inputs must be a tuple or a list");
    return NULL;
  }
  Py_ssize_t n = PySequence_Size(inputs);
  PyObject* outputs = n < 0 ? NULL : PyTuple_New(n);
  for (Py_ssize_t i = 0; outputs && i < n; ++i) {
    PyObject* input = PySequence_GetItem(inputs, i);
    PyObject* out =
        input ? PyObject_CallFunctionObjArgs(make, input, NULL) : NULL;
    Py_XDECREF(input);
    if (!out || PyTuple_SetItem(outputs, i, out) < 0) Py_CLEAR(outputs);
  }
  return outputs;
}

static PyObject* run(PyObject* module, PyObject* args) {
  (void)module;
  op_request r = {0};
  int cache = 0;
  hvd_handle* handle = NULL;
  if (request_args_read(args, "run", &r, &cache) < 0) return NULL;
  PyObject* made = NULL;
  if (r.outputs != Py_None && PyCallable_Check(r.outputs)) {
    made = make_outputs(r.outputs, r.inputs);
    if (!made) return NULL;
    r.outputs = made;
    r.outputs_like = 1;
  }
  if (start(&r, cache, &handle) < 0) {
    Py_XDECREF(made);
    return NULL;
  }
  int waited = native_wait_started(handle, NULL);
  hvd_release(handle);
  if (waited < 0) {
    Py_XDECREF(made);
    return NULL;
  }
  if (made) return made;
  Py_RETURN_NONE;
}

/* ---- process-set changes, started here and waited for by the caller ----- */

/* The Handle of a started change, or NULL with the call's error raised. */
static PyObject* started_change(hvd_status status, hvd_handle* handle,
                                const char* what) {
  if (status != HVD_OK) {
    return native_raise_for_status(status, what, hvd_last_error());
  }
  return native_handle_new(handle_type, handle);
}

static PyObject* start_add_process_set(PyObject* module, PyObject* ranks) {
  (void)module;
  Py_ssize_t n = PySequence_Size(ranks);
  if (n < 0) return NULL;
  int32_t* values = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *values);
  if (!values) return PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_GetItem(ranks, i);
    long v = item ? PyLong_AsLong(item) : -1;
    Py_XDECREF(item);
    if (v == -1 && PyErr_Occurred()) {
      PyMem_Free(values);
      return NULL;
    }
    values[i] = (int32_t)v;
  }
  hvd_handle* handle = NULL;
  hvd_status status =
      hvd_enqueue_add_process_set(values, (int32_t)n, &handle);
  PyMem_Free(values);
  return started_change(status, handle, "add_process_set");
}

static PyObject* start_remove_process_set(PyObject* module, PyObject* arg) {
  (void)module;
  long id = PyLong_AsLong(arg);
  if (id == -1 && PyErr_Occurred()) return NULL;
  hvd_handle* handle = NULL;
  hvd_status status = hvd_enqueue_remove_process_set((int32_t)id, &handle);
  return started_change(status, handle, "remove_process_set");
}

/* ---- enqueue_each: one op per tensor ----------------------------------- */

/* Waits for the ops already started when a later one failed, so that none
 * is left in flight over the caller's tensors; keeps that failure's
 * exception. */
static void finish_started(PyObject* handles, Py_ssize_t started) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  for (Py_ssize_t i = 0; i < started; ++i) {
    PyObject* wait = PyObject_CallMethod(PyList_GetItem(handles, i), "wait",
                                         NULL);
    if (!wait) PyErr_Clear();
    Py_XDECREF(wait);
  }
  PyErr_Restore(type, value, traceback);
}

static Py_ssize_t each_length(PyObject* names, PyObject* inputs,
                              PyObject* outputs) {
  if (!PyList_Check(names) || !PyList_Check(inputs) ||
      (outputs != Py_None && !PyList_Check(outputs))) {
    PyErr_SetString(PyExc_TypeError,
                    "enqueue_each takes lists of names, inputs and outputs");
    return -1;
  }
  Py_ssize_t n = PyList_Size(names);
  if (PyList_Size(inputs) != n ||
      (outputs != Py_None && PyList_Size(outputs) != n)) {
    PyErr_Format(PyExc_ValueError,
                 "enqueue_each: %zd names for %zd inputs", n,
                 PyList_Size(inputs));
    return -1;
  }
  return n;
}

/* Starts op i of an enqueue_each call: `each` with its name and tensors. */
static int start_each(op_request* each, int cache, PyObject* names,
                      PyObject* inputs, PyObject* outputs, Py_ssize_t i,
                      hvd_handle** handle) {
  op_request r = *each;
  r.name = PyList_GetItem(names, i);
  r.inputs = PyTuple_Pack(1, PyList_GetItem(inputs, i));
  r.outputs = outputs == Py_None ? Py_None
                                 : PyTuple_Pack(1, PyList_GetItem(outputs, i));
  int rc = r.inputs && r.outputs ? start(&r, cache, handle) : -1;
  Py_XDECREF(r.inputs);
  if (outputs != Py_None) Py_XDECREF(r.outputs);
  return rc;
}

static PyObject* enqueue_each(PyObject* module, PyObject* args) {
  (void)module;
  op_request r = {0};
  int cache = 0;
  PyObject* names = NULL;
  if (!PyArg_ParseTuple(args, "iOpiiddiOO:enqueue_each", &r.collective,
                        &names, &cache, &r.process_set, &r.reduce_op,
                        &r.prescale, &r.postscale, &r.root, &r.inputs,
                        &r.outputs)) {
    return NULL;
  }
  r.splits = Py_None;
  r.stream = 0;
  r.given = Py_None;
  if (refuse_made_outputs(r.outputs, "enqueue_each") < 0) return NULL;
  Py_ssize_t n = each_length(names, r.inputs, r.outputs);
  PyObject* handles = n < 0 ? NULL : PyList_New(n);
  if (!handles) return NULL;
  for (Py_ssize_t i = 0; i < n; ++i) {
    hvd_handle* handle = NULL;
    PyObject* h = NULL;
    if (start_each(&r, cache, names, r.inputs, r.outputs, i, &handle) == 0) {
      h = native_handle_new(handle_type, handle);
    }
    if (!h) {
      finish_started(handles, i);
      Py_DECREF(handles);
      return NULL;
    }
    PyList_SetItem(handles, i, h);
  }
  return handles;
}

static PyMethodDef module_methods[] = {
    {"run", run, METH_VARARGS,
     "run(collective, name, cache, process_set, reduce_op, prescale, "
     "postscale, root, inputs, outputs, splits, stream=0, given=None)"
     "\n--\n\n"
     "enqueue() and waiting for the op (GIL released), in one call and "
     "without a Handle: for ops whose outputs the caller provides, or "
     "makes here: with outputs a function (e.g. torch.empty_like), "
     "outputs[i] is outputs(inputs[i]), which must have the input's dtype, "
     "shape and device (only its data pointer is read), and run() returns "
     "the tuple of outputs; else None."},
    {"enqueue_each", enqueue_each, METH_VARARGS,
     "enqueue_each(collective, names, cache, process_set, reduce_op, "
     "prescale, postscale, root, inputs, outputs)\n--\n\n"
     "One op per tensor, named names[i], over inputs[i] (and outputs[i] "
     "unless outputs is None), all with the same arguments, in one call; "
     "returns their Handles. An op that fails to start raises with its "
     "name, after the ops started before it have finished."},
    {"set_dtypes", tensor_desc_set_dtypes, METH_O,
     "set_dtypes(mapping)\n--\n\n"
     "Lets tensors be passed as objects read through torch's protocol: "
     "data_ptr(), dtype (looked up in `mapping`, framework dtype -> (dtype "
     "code, bits)), shape, get_device() (-1 for host memory)."},
    {"enqueue", enqueue, METH_VARARGS,
     "enqueue(collective, name, cache, process_set, reduce_op, prescale, "
     "postscale, root, inputs, outputs, splits, stream=0, given=None)"
     "\n--\n\n"
     "Starts one collective on the core and returns its Handle. `stream`: "
     "the hvd_stream the op runs on (0: none); `given`: for allgather and "
     "alltoall, outputs the caller allocated with the shapes the ranks will "
     "negotiate (the core checks them), which the core writes into instead "
     "of memory of its own. Tensors "
     "are (data pointer, (dtype code, bits), shape, device: -1 for host "
     "memory, else the CUDA device), or tensor objects once set_dtypes() "
     "was called. With cache, the op's descriptor is "
     "kept under its name and reused while later calls describe the same "
     "op. Raises as horovod.common.exceptions.raise_for_status does."},
    {"start_add_process_set", start_add_process_set, METH_O,
     "start_add_process_set(ranks)\n--\n\n"
     "Starts adding a process set of these world ranks "
     "(hvd_enqueue_add_process_set); returns its Handle, whose output(0) "
     "holds the new set's id (int32) once wait() returned."},
    {"start_remove_process_set", start_remove_process_set, METH_O,
     "start_remove_process_set(id)\n--\n\n"
     "Starts removing process set `id` (hvd_enqueue_remove_process_set); "
     "returns its Handle."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_native",
    "The hot calls of horovod's bindings (enqueue, wait) in C, on CPython's "
    "stable ABI.",
    -1, module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
  PyObject* module = PyModule_Create(&module_def);
  if (!module) return NULL;
  if (tensor_desc_module_init() < 0) {
    Py_DECREF(module);
    return NULL;
  }
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
