#include "options.h"

#include "common/config_reader.h"

namespace hvd_mpi {

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(host, {"max_requests", "timeout"});
  Options o;
  o.max_requests = reader.max_requests(o.max_requests);
  o.timeout_seconds =
      reader.integer("timeout", o.timeout_seconds, 1, 24 * 3600);
  return o;
}

}  // namespace hvd_mpi
