// TF_Status owned, and the core's statuses as TensorFlow error codes, as
// Horovod's TensorFlow ops report them: ranks that disagree about an op
// fail it with FAILED_PRECONDITION (tf.errors.FailedPreconditionError).
#pragma once

#include <tensorflow/c/tf_status.h>

#include <string>

#include "horovod/abi.h"

namespace hvd::tf {

TF_Code tf_code(hvd_status status);

class Status {
 public:
  Status() : s_(TF_NewStatus()) {}
  ~Status() { TF_DeleteStatus(s_); }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;

  TF_Status* get() const { return s_; }
  bool ok() const { return TF_GetCode(s_) == TF_OK; }
  const char* message() const { return TF_Message(s_); }
  void set(TF_Code code, const std::string& message) {
    TF_SetStatus(s_, code, message.c_str());
  }

 private:
  TF_Status* s_;
};

}  // namespace hvd::tf
