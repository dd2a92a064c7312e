// What the GPU tests share: whether this machine has a CUDA device (and if
// not, why), and the nccl transport's table and collectives extension.
#pragma once

#include <string>

#include "horovod/transport.h"

namespace hvd_gpu_test {

// Devices usable here; 0 with the reason in `why`.
int cuda_devices(std::string* why);

const hvd_transport_api& nccl_api();
const hvd_transport_collectives& nccl_collectives();

// Drives `req` through the transport's test(), sleeping on its wait fd;
// fails (throws) after `seconds`.
hvd_completion wait(const hvd_transport_api& api, hvd_transport* t,
                    hvd_request* req, int seconds = 60);

}  // namespace hvd_gpu_test
