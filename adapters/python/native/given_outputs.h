/*
 * Outputs a binding allocated before an allgather or alltoall (of device
 * tensors, whose output shapes it learnt first), handed to the core
 * through an adapter whose allocate_output gives them back: the core then
 * writes the results straight into the framework's memory on the device
 * instead of allocating host memory for them. The core checks that each
 * one has the negotiated shape and the input's dtype, and fails the op
 * with a message saying so when not.
 */
#ifndef HOROVOD_NATIVE_GIVEN_OUTPUTS_H
#define HOROVOD_NATIVE_GIVEN_OUTPUTS_H

#include "native.h"

typedef struct given_outputs given_outputs;

/* The outputs in `tensors` (a tuple or list of tensors, one per input);
 * NULL with an exception set. */
given_outputs* given_outputs_read(PyObject* tensors);
/* For an op that never started (hvd_enqueue failed: no done() comes). */
void given_outputs_free(given_outputs* g);
/* Makes `op` take its outputs from `g` (freed by the adapter's done());
 * -1 with an exception set when the adapter cannot be registered. */
int given_outputs_attach(hvd_op* op, given_outputs* g);

#endif
