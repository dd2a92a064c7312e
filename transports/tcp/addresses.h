// Network addresses: this host's interfaces, the listen handle that lists
// where a listener can be reached, and how addresses read in messages.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "horovod/transport.h"

namespace hvd_tcp {

constexpr uint32_t kMaxStreams = 16;

// An IPv4 or IPv6 address with a port.
struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t port);
  std::string text() const;  // "192.0.2.2:41234", "[fd00::2]:41234"
};

// Names of the interfaces that are up.
std::vector<std::string> interface_names();
// The usable addresses of one interface (IPv4, then IPv6 without
// link-local ones), port 0.
std::vector<Address> interface_addresses(const std::string& name);
// What a listener on all interfaces advertises: every address of every
// interface that is up, loopback last and only when nothing else exists.
std::vector<Address> advertised_addresses();

// The fastest link speed the kernel reports for these interfaces (all that
// are up and not loopback when `names` is empty), in Gbit/s; 0 when none
// reports one (virtual NICs often do not).
double link_gbps(const std::vector<std::string>& names);

constexpr uint32_t kHandleMagic = 0x48565450;  // "HVTP"
constexpr uint16_t kHandleVersion = 1;
constexpr size_t kHandleEntries = 12;

struct HandleEntry {
  uint8_t family;  // 4 or 6
  uint8_t reserved;
  uint16_t port;  // host order
  uint8_t address[16];
};

struct Handle {
  uint32_t magic;
  uint16_t version;
  uint16_t count;
  HandleEntry entries[kHandleEntries];
};
static_assert(sizeof(Handle) <= HVD_TRANSPORT_HANDLE_MAX);

void write_handle(const std::vector<Address>& addresses, Handle* out);
// The handle's addresses; false when it is not a tcp handle.
bool read_handle(const Handle& handle, std::vector<Address>* out);

}  // namespace hvd_tcp
