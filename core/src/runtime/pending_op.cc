#include "runtime/pending_op.h"

#include "common/error.h"
#include "device/device.h"
#include "runtime/agreement.h"
#include "runtime/memory_route.h"

namespace hvd::runtime {

std::string PendingOp::describe() const {
  return std::string(call_name(request)) + " '" + request.name + "'";
}

std::string prefixed(const PendingOp& op, const std::string& message) {
  std::string what = op.describe();
  if (message.rfind(what, 0) == 0) return message;
  return what + ": " + message;
}

std::vector<int64_t> reducescatter_rows(int64_t rows, int32_t set_size) {
  std::vector<int64_t> out(set_size, rows / set_size);
  for (int64_t r = 0; r < rows % set_size; ++r) ++out[r];
  return out;
}

namespace {

bool takes_name(hvd_collective c) {
  return c != HVD_COLL_BARRIER && c != HVD_COLL_JOIN;
}

}  // namespace

PendingOp make_pending_op(const hvd_op& op, int32_t set_size, int32_t set_rank,
                          const std::string& barrier_name) {
  if (!HVD_HAS_FIELD(&op, hvd_op, adapter_op)) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "hvd_enqueue: hvd_op of " + std::to_string(op.struct_size) +
                    " bytes is too small (struct_size not set?)");
  }
  if (op.collective < 0 || op.collective >= HVD_COLL_COUNT) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_enqueue: unknown collective " +
                                              std::to_string(op.collective));
  }
  PendingOp p;
  Request& q = p.request;
  q.collective = op.collective;
  q.process_set = op.process_set;
  const char* cname = collective_name(op.collective);
  if (op.name && *op.name) {
    q.name = op.name;
  } else if (!takes_name(op.collective)) {
    q.name = barrier_name;
  } else {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                std::string("hvd_enqueue: ") + cname + " without a name");
  }
  // Built only for an error message.
  auto what = [&] { return std::string(cname) + " '" + q.name + "'"; };
  auto invalid = [&](const std::string& why) {
    return Error(HVD_ERR_INVALID_ARGUMENT, what() + ": " + why);
  };

  if (!takes_name(op.collective)) {
    if (op.tensor_count != 0) throw invalid("takes no tensors");
  } else {
    if (op.tensor_count < 1) throw invalid("needs at least one tensor");
    if (!op.inputs) throw invalid("inputs is null");
    if (op.tensor_count > 1 && (op.collective == HVD_COLL_BROADCAST ||
                                op.collective == HVD_COLL_ALLTOALL)) {
      throw invalid(
          "grouped ops are allreduce, allgather and reducescatter "
          "only");
    }
  }

  for (int32_t i = 0; i < op.tensor_count; ++i) {
    p.inputs.push_back(view_tensor(op.inputs[i], cname, q.name, "input", i));
    const TensorView& in = p.inputs.back();
    if (i > 0 && in.dtype != p.inputs[0].dtype) {
      throw invalid("grouped tensors differ in dtype (" +
                    std::string(dtype_name(p.inputs[0].dtype)) + " and " +
                    dtype_name(in.dtype) + ")");
    }
    q.shapes.push_back(in.shape);
  }
  if (!p.inputs.empty()) {
    q.dtype = p.inputs[0].dtype;
    q.mem_kind = p.inputs[0].device.kind;
    q.device_id = p.inputs[0].device.id;
  }

  const bool reduces = op.collective == HVD_COLL_ALLREDUCE ||
                       op.collective == HVD_COLL_REDUCESCATTER;
  if (reduces) {
    if (op.op < 0 || op.op >= HVD_OP_COUNT) {
      throw invalid("unknown reduction op " + std::to_string(op.op));
    }
    if (op.op == HVD_OP_ADASUM &&
        (op.collective != HVD_COLL_ALLREDUCE || op.tensor_count > 1)) {
      // Adasum's coefficients are per tensor; a reducer sees one buffer.
      throw Error(HVD_ERR_UNSUPPORTED,
                  what() + ": adasum runs allreduce of one tensor at a time");
    }
    q.op = op.op;
    q.prescale = op.prescale == 0 ? 1.0 : op.prescale;
    q.postscale = op.postscale == 0 ? 1.0 : op.postscale;
    if (q.dtype == HVD_BOOL &&
        (q.op == HVD_OP_AVERAGE || q.prescale != 1.0 || q.postscale != 1.0)) {
      throw invalid("bool tensors cannot be averaged or scaled");
    }
  }
  if (op.collective == HVD_COLL_BROADCAST) {
    if (op.root < 0 || op.root >= set_size) {
      throw invalid("root " + std::to_string(op.root) +
                    " is not a rank of a set of " + std::to_string(set_size));
    }
    q.root = op.root;
  }
  if (op.collective == HVD_COLL_ALLGATHER ||
      op.collective == HVD_COLL_ALLTOALL ||
      op.collective == HVD_COLL_REDUCESCATTER) {
    for (const TensorView& in : p.inputs) {
      if (in.shape.empty()) {
        throw invalid("needs tensors of at least one dimension");
      }
    }
  }

  // Outputs.
  const bool allocated_later =
      op.collective == HVD_COLL_ALLGATHER || op.collective == HVD_COLL_ALLTOALL;
  if (allocated_later && op.outputs) {
    throw invalid(
        "outputs must be null: the output is allocated once its "
        "shape is negotiated (through the adapter, or read with "
        "hvd_handle_output)");
  }
  if (op.collective == HVD_COLL_REDUCESCATTER && !op.outputs) {
    throw invalid("needs outputs");
  }
  if (!allocated_later && takes_name(op.collective)) {
    for (int32_t i = 0; i < op.tensor_count; ++i) {
      const TensorView& in = p.inputs[i];
      if (!op.outputs) {
        p.outputs.push_back(in);  // in place
        continue;
      }
      TensorView out = view_tensor(op.outputs[i], cname, q.name, "output", i);
      std::vector<int64_t> expected = in.shape;
      if (op.collective == HVD_COLL_REDUCESCATTER) {
        expected[0] = reducescatter_rows(in.shape[0], set_size)[set_rank];
      }
      if (out.dtype != in.dtype) {
        throw invalid("output " + std::to_string(i) + " has dtype " +
                      dtype_name(out.dtype) + ", the input " +
                      dtype_name(in.dtype));
      }
      if (out.shape != expected) {
        throw invalid("output " + std::to_string(i) + " has shape " +
                      shape_text(out.shape) + ", expected " +
                      shape_text(expected));
      }
      p.outputs.push_back(out);
    }
  }

  if (op.collective == HVD_COLL_ALLTOALL) {
    const int64_t rows = p.inputs[0].shape[0];
    if (op.splits) {
      if (op.split_count != set_size) {
        throw invalid("split_count " + std::to_string(op.split_count) +
                      " is not the set size " + std::to_string(set_size));
      }
      int64_t sum = 0;
      for (int32_t r = 0; r < set_size; ++r) {
        if (op.splits[r] < 0) throw invalid("negative split");
        q.splits.push_back(op.splits[r]);
        sum += op.splits[r];
      }
      if (sum != rows) {
        throw invalid("splits add up to " + std::to_string(sum) +
                      " rows, the tensor has " + std::to_string(rows));
      }
    } else {
      if (rows % set_size != 0) {
        throw invalid("without splits the first dimension (" +
                      std::to_string(rows) + ") must divide by the set size " +
                      std::to_string(set_size));
      }
      q.splits.assign(set_size, rows / set_size);
    }
  }

  if (op.adapter) {
    // Checked against the registry by the caller (adapter_acquire).
    p.adapter = op.adapter;
    p.adapter_op = op.adapter_op;
  }
  p.done = op.done;
  p.user = op.user;
  if (!p.inputs.empty()) {
    const hvd_device first = p.inputs[0].device;
    auto differs = [&](const TensorView& v) {
      return v.device.kind != first.kind || v.device.id != first.id;
    };
    bool mixed = false;
    for (const TensorView& v : p.inputs) mixed = mixed || differs(v);
    for (const TensorView& v : p.outputs) mixed = mixed || differs(v);
    if (mixed) {
      std::vector<hvd_device> devices;
      for (const TensorView& v : p.inputs) devices.push_back(v.device);
      for (const TensorView& v : p.outputs) devices.push_back(v.device);
      uniform_device(devices, what());  // throws, naming both devices
    }
  }
  p.ready_event = op.ready_event;
  p.stream = op.stream;
  return p;
}

}  // namespace hvd::runtime
