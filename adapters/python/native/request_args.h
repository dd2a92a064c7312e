/*
 * The positional arguments of run() and enqueue() read into an op_request
 * by hand: PyArg_ParseTuple's format interpreter cost a measurable part of
 * a 4 B op's time in the binding.
 */
#ifndef HOROVOD_NATIVE_REQUEST_ARGS_H
#define HOROVOD_NATIVE_REQUEST_ARGS_H

#include "op_descriptor.h"

/* (collective, name, cache, process_set, reduce_op, prescale, postscale,
 * root, inputs, outputs, splits[, stream[, given]]) into *r and *cache; -1
 * with a TypeError or OverflowError naming `fn` and the argument. */
int request_args_read(PyObject* args, const char* fn, op_request* r,
                      int* cache);

#endif
