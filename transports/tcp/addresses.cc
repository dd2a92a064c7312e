#include "addresses.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace hvd_tcp {

uint16_t Address::port() const {
  if (family() == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
}

void Address::set_port(uint16_t port) {
  if (family() == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
  }
}

std::string Address::text() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET,
              &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, buf,
              sizeof(buf));
    return std::string(buf) + ":" + std::to_string(port());
  }
  inet_ntop(AF_INET6,
            &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, buf,
            sizeof(buf));
  return "[" + std::string(buf) + "]:" + std::to_string(port());
}

namespace {

struct Found {
  std::string name;
  bool loopback;
  Address address;
};

bool link_local(const sockaddr_in6* a) {
  return IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr);
}

std::vector<Found> all_addresses() {
  std::vector<Found> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || !(i->ifa_flags & IFF_UP)) continue;
    int family = i->ifa_addr->sa_family;
    Found f;
    f.name = i->ifa_name;
    f.loopback = i->ifa_flags & IFF_LOOPBACK;
    if (family == AF_INET) {
      std::memcpy(&f.address.storage, i->ifa_addr, sizeof(sockaddr_in));
      f.address.length = sizeof(sockaddr_in);
    } else if (family == AF_INET6 &&
               !link_local(reinterpret_cast<sockaddr_in6*>(i->ifa_addr))) {
      std::memcpy(&f.address.storage, i->ifa_addr, sizeof(sockaddr_in6));
      f.address.length = sizeof(sockaddr_in6);
    } else {
      continue;
    }
    f.address.set_port(0);
    out.push_back(f);
  }
  freeifaddrs(list);
  // IPv4 first: it is what most clusters route.
  std::stable_sort(out.begin(), out.end(), [](const Found& a, const Found& b) {
    return a.address.family() == AF_INET && b.address.family() != AF_INET;
  });
  return out;
}

}  // namespace

std::vector<std::string> interface_names() {
  std::vector<std::string> names;
  for (const Found& f : all_addresses()) {
    if (std::find(names.begin(), names.end(), f.name) == names.end()) {
      names.push_back(f.name);
    }
  }
  return names;
}

std::vector<Address> interface_addresses(const std::string& name) {
  std::vector<Address> out;
  for (const Found& f : all_addresses()) {
    if (f.name == name) out.push_back(f.address);
  }
  return out;
}

std::vector<Address> advertised_addresses() {
  std::vector<Address> out, loopback;
  for (const Found& f : all_addresses()) {
    (f.loopback ? loopback : out).push_back(f.address);
  }
  return out.empty() ? loopback : out;
}

double link_gbps(const std::vector<std::string>& names) {
  std::vector<std::string> list = names;
  if (list.empty()) {
    for (const Found& f : all_addresses()) {
      if (!f.loopback) list.push_back(f.name);
    }
  }
  double best = 0;
  for (const std::string& name : list) {
    std::ifstream in("/sys/class/net/" + name + "/speed");
    long mbps = -1;
    if (in >> mbps && mbps > 0) best = std::max(best, mbps / 1000.0);
  }
  return best;
}

void write_handle(const std::vector<Address>& addresses, Handle* out) {
  std::memset(out, 0, sizeof(*out));
  out->magic = kHandleMagic;
  out->version = kHandleVersion;
  for (const Address& a : addresses) {
    if (out->count == kHandleEntries) break;
    HandleEntry& e = out->entries[out->count++];
    e.port = a.port();
    if (a.family() == AF_INET) {
      e.family = 4;
      std::memcpy(e.address,
                  &reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr,
                  4);
    } else {
      e.family = 6;
      std::memcpy(e.address,
                  &reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr,
                  16);
    }
  }
}

bool read_handle(const Handle& handle, std::vector<Address>* out) {
  if (handle.magic != kHandleMagic || handle.version != kHandleVersion ||
      handle.count == 0 || handle.count > kHandleEntries) {
    return false;
  }
  for (uint16_t i = 0; i < handle.count; ++i) {
    const HandleEntry& e = handle.entries[i];
    Address a;
    if (e.family == 4) {
      auto* sin = reinterpret_cast<sockaddr_in*>(&a.storage);
      sin->sin_family = AF_INET;
      std::memcpy(&sin->sin_addr, e.address, 4);
      a.length = sizeof(sockaddr_in);
    } else if (e.family == 6) {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
      sin6->sin6_family = AF_INET6;
      std::memcpy(&sin6->sin6_addr, e.address, 16);
      a.length = sizeof(sockaddr_in6);
    } else {
      return false;
    }
    a.set_port(e.port);
    out->push_back(a);
  }
  return true;
}

}  // namespace hvd_tcp
