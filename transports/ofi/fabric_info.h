// What horovod-info shows for ofi (hvd_plugin_info): libfabric's version and
// the providers that offer reliable tagged datagrams (FI_EP_RDM, FI_TAGGED)
// here, as its FI_* environment filters them.
#pragma once

namespace hvd_ofi {

const char* describe_fabric();

}  // namespace hvd_ofi
