// What horovod-info shows for ucx (hvd_plugin_info): UCX's version and the
// transports and devices UCX finds here, as its UCX_* environment selects.
#pragma once

namespace hvd_ucx {

const char* describe_fabric();

}  // namespace hvd_ucx
