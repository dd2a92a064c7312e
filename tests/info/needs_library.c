/*
 * A transport linked against a library that is not on the loader's path,
 * as a transport built against Open MPI or UCX is on a machine without
 * them: horovod-info must say which library is missing.
 */
#include "horovod/transport.h"

int hvd_info_dependency(void);

HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(uint32_t major,
                                                          uint32_t minor) {
  (void)major, (void)minor;
  return hvd_info_dependency() ? (const hvd_transport_api*)0 : 0;
}
