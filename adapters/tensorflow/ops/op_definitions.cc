// The ops, with Horovod's names, attributes and shape functions.
#include <tensorflow/c/ops.h>

#include <initializer_list>

#include "dtypes.h"
#include "registration.h"

namespace hvd::tf {
namespace {

using ShapeFn = void (*)(TF_ShapeInferenceContext*, TF_Status*);

// Output i has input i's shape (allreduce, broadcast; grouped too).
void same_shapes(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  TF_ShapeHandle* shape = TF_NewShapeHandle();
  for (int64_t i = 0; i < TF_ShapeInferenceContextNumInputs(ctx); ++i) {
    TF_ShapeInferenceContextGetInput(ctx, static_cast<int>(i), shape, status);
    if (TF_GetCode(status) != TF_OK) break;
    TF_ShapeInferenceContextSetOutput(ctx, static_cast<int>(i), shape, status);
    if (TF_GetCode(status) != TF_OK) break;
  }
  TF_DeleteShapeHandle(shape);
}

// First dimensions known only after negotiation (allgather, alltoall,
// reducescatter). The C API cannot make a dimension unknown, so the whole
// shape is; the Python wrappers set [None] + the input's other dimensions.
void negotiated_shapes(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  TF_ShapeInferenceContextSetUnknownShape(ctx, status);
}

void scalar_output(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  TF_ShapeHandle* scalar = TF_ShapeInferenceContextScalar(ctx);
  TF_ShapeInferenceContextSetOutput(ctx, 0, scalar, status);
  TF_DeleteShapeHandle(scalar);
}

void no_outputs(TF_ShapeInferenceContext*, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
}

struct OpSpec {
  const char* name;
  std::initializer_list<const char*> attrs;
  std::initializer_list<const char*> inputs;
  std::initializer_list<const char*> outputs;
  ShapeFn shape_fn;
  bool stateful;  // runs at every step, never folded or pruned
};

void define(const OpSpec& spec) {
  TF_OpDefinitionBuilder* b = TF_NewOpDefinitionBuilder(spec.name);
  for (const char* a : spec.attrs) TF_OpDefinitionBuilderAddAttr(b, a);
  for (const char* i : spec.inputs) TF_OpDefinitionBuilderAddInput(b, i);
  for (const char* o : spec.outputs) TF_OpDefinitionBuilderAddOutput(b, o);
  TF_OpDefinitionBuilderSetShapeInferenceFunction(b, spec.shape_fn);
  if (spec.stateful) TF_OpDefinitionBuilderSetIsStateful(b, true);
  Status status;
  TF_RegisterOpDefinition(b, status.get());
  check_registered(spec.name, status);
}

}  // namespace

void register_op_definitions() {
  const char* kName = "ignore_name_scope: bool = False";
  const char* kSet = "process_set_id: int = 0";
  const char* kScale[] = {"prescale_factor: float = 1.0",
                          "postscale_factor: float = 1.0"};
  const char* kOp = "reduce_op: int";
  const char* kGroup = "num_tensors: int >= 1";
  // Collectives are not stateful, as Horovod's: tf.function then leaves
  // them unordered, so the ranks' ops overlap and fuse.
  define({"HorovodAllreduce",
          {kTypeAttr, kOp, kScale[0], kScale[1], kName, kSet},
          {"tensor: T"},
          {"sum: T"},
          same_shapes,
          false});
  define({"HorovodGroupedAllreduce",
          {kTypeAttr, kOp, kScale[0], kScale[1], kName, kSet, kGroup},
          {"tensors: num_tensors*T"},
          {"sum: num_tensors*T"},
          same_shapes,
          false});
  define({"HorovodAllgather",
          {kTypeAttr, kName, kSet},
          {"tensor: T"},
          {"output: T"},
          negotiated_shapes,
          false});
  define({"HorovodGroupedAllgather",
          {kTypeAttr, kName, kSet, kGroup},
          {"tensors: num_tensors*T"},
          {"output: num_tensors*T"},
          negotiated_shapes,
          false});
  define({"HorovodBroadcast",
          {kTypeAttr, "root_rank: int", kName, kSet},
          {"tensor: T"},
          {"output: T"},
          same_shapes,
          false});
  define({"HorovodAlltoall",
          {kTypeAttr, kName, kSet},
          {"tensor: T", "splits: int32"},
          {"output: T", "received_splits: int32"},
          negotiated_shapes,
          false});
  define({"HorovodReducescatter",
          {kTypeAttr, kOp, kScale[0], kScale[1], kName, kSet},
          {"tensor: T"},
          {"output: T"},
          negotiated_shapes,
          false});
  define({"HorovodGroupedReducescatter",
          {kTypeAttr, kOp, kScale[0], kScale[1], kName, kSet, kGroup},
          {"tensors: num_tensors*T"},
          {"output: num_tensors*T"},
          negotiated_shapes,
          false});
  define({"HorovodJoin", {}, {}, {"output: int32"}, scalar_output, true});
  define({"HorovodBarrier", {kSet}, {}, {}, no_outputs, true});
  // Graph-time queries of the job's layout, evaluated when run.
  define({"HorovodSize", {kSet}, {}, {"size: int32"}, scalar_output, true});
  define(
      {"HorovodLocalSize", {}, {}, {"local_size: int32"}, scalar_output, true});
  define({"HorovodRank", {}, {}, {"rank: int32"}, scalar_output, true});
  define(
      {"HorovodLocalRank", {}, {}, {"local_rank: int32"}, scalar_output, true});
  define({"HorovodProcessSetIncluded",
          {kSet},
          {},
          {"included: int32"},
          scalar_output,
          true});
}

}  // namespace hvd::tf
