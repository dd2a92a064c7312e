/*
 * The hvd_op a binding's enqueue() call describes, built once per op name
 * and reused while later calls describe the same op (only data pointers
 * change), so a steady training loop hands the core a ready descriptor.
 */
#ifndef HOROVOD_NATIVE_OP_DESCRIPTOR_H
#define HOROVOD_NATIVE_OP_DESCRIPTOR_H

#include "native.h"

typedef struct op_request {
  hvd_collective collective;
  PyObject* name; /* str or None */
  int32_t process_set;
  hvd_reduce_op reduce_op;
  double prescale, postscale;
  int32_t root;
  /* Tensors: description tuples or tensor objects (tensor_desc.h). */
  PyObject* inputs;  /* tuple or list */
  PyObject* outputs; /* tuple, list or None */
  /* The outputs were made like the inputs (same dtype, shape and device,
   * e.g. by torch.empty_like): only their data pointers are read. */
  int outputs_like;
  PyObject* splits;  /* sequence of int or None */
  /* Not part of the descriptor: per call. The hvd_stream the op runs on
   * (0: none), and outputs allocated by the binding for an allgather or
   * alltoall (given_outputs.h), or None. */
  unsigned long long stream;
  PyObject* given;
} op_request;

typedef struct op_descriptor op_descriptor;

/* A descriptor for `request`; NULL with an exception set on bad input. */
op_descriptor* op_descriptor_build(const op_request* request);
void op_descriptor_free(op_descriptor* d);
/* 1 when `d` describes `request` but for data pointers, which it then
 * takes from the request; 0 when the request differs; -1 on bad input. */
int op_descriptor_refresh(op_descriptor* d, const op_request* request);
const hvd_op* op_descriptor_op(const op_descriptor* d);

#endif
