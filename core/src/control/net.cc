#include "control/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/log.h"

namespace hvd::control {
namespace {

std::string system_error(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

bool is_loopback(const in_addr& address) {
  return (ntohl(address.s_addr) >> 24) == 127;
}

std::string to_text(const in_addr& address) {
  char text[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &address, text, sizeof text);
  return text;
}

// The IPv4 address of interface `name`, or "".
std::string interface_address(const ifaddrs* list, const std::string& name) {
  for (const ifaddrs* i = list; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && name == i->ifa_name)
      return to_text(
          reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr);
  return "";
}

std::string first_external_address(const ifaddrs* list) {
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    const auto& address =
        reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    if (!is_loopback(address)) return to_text(address);
  }
  return "";
}

std::string resolve_external(const std::string& hostname) {
  if (hostname.empty()) return "";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(hostname.c_str(), nullptr, &hints, &found) != 0) return "";
  std::string result;
  for (addrinfo* a = found; a && result.empty(); a = a->ai_next) {
    const auto& address =
        reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
    if (!is_loopback(address)) result = to_text(address);
  }
  freeaddrinfo(found);
  return result;
}

sockaddr_in make_address(const std::string& ip, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &address.sin_addr) != 1)
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "control plane: '" + ip + "' is not an IPv4 address");
  return address;
}

}  // namespace

ListenAddress choose_listen_address(const std::vector<std::string>& interfaces,
                                    bool all_ranks_local,
                                    const std::string& hostname) {
  if (!interfaces.empty()) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0)
      throw Error(HVD_ERR_SYSTEM, system_error("control plane: getifaddrs"));
    std::string found;
    for (const auto& name : interfaces)
      if (found.empty()) found = interface_address(list, name);
    freeifaddrs(list);
    if (found.empty()) {
      std::string names;
      for (const auto& name : interfaces)
        names += (names.empty() ? "" : ",") + name;
      throw Error(HVD_ERR_CONFIG,
                  "control plane: none of the network interfaces '" + names +
                      "' (HOROVOD_NETWORK_INTERFACES) has an IPv4 address");
    }
    return {found, found};
  }
  if (all_ranks_local) return {"127.0.0.1", "127.0.0.1"};

  std::string published = resolve_external(hostname);
  if (published.empty()) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) == 0) {
      published = first_external_address(list);
      freeifaddrs(list);
    }
  }
  if (published.empty()) {
    HVD_LOG(WARNING) << "control plane: no external IPv4 address found for "
                     << "host '" << hostname << "'; using loopback";
    return {"127.0.0.1", "127.0.0.1"};
  }
  return {"0.0.0.0", published};
}

int listen_tcp(const std::string& ip, int backlog, int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw Error(HVD_ERR_SYSTEM, system_error("control plane: socket"));
  sockaddr_in address = make_address(ip, 0);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(fd, backlog) != 0) {
    std::string message = system_error("control plane: listening on " + ip);
    close(fd);
    throw Error(HVD_ERR_SYSTEM, message);
  }
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  *port = ntohs(address.sin_port);
  set_nonblocking(fd);
  return fd;
}

int connect_tcp(const std::string& ip, int port, Clock::time_point deadline,
                const std::string& what) {
  sockaddr_in address = make_address(ip, port);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    throw Error(HVD_ERR_SYSTEM, system_error("control plane: socket"));
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  int error = rc == 0 ? 0 : errno;
  if (error == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int n = poll(&p, 1, poll_timeout_ms(deadline));
    socklen_t length = sizeof error;
    if (n <= 0)
      error = ETIMEDOUT;
    else
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  }
  if (error == 0) {
    set_nodelay(fd);
    return fd;
  }
  close(fd);
  bool again = error == ECONNREFUSED || error == ECONNRESET ||
               error == ETIMEDOUT || error == EAGAIN || error == EINTR;
  if (again) return -1;
  errno = error;
  throw Error(HVD_ERR_SYSTEM,
              system_error("control plane: connecting to " + what + " at " +
                           ip + ":" + std::to_string(port)));
}

int accept_tcp(int listen_fd) {
  int fd;
  do {
    fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED)
      return -1;
    throw Error(HVD_ERR_SYSTEM, system_error("control plane: accept"));
  }
  set_nodelay(fd);
  return fd;
}

void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool split_host_port(const std::string& text, std::string* host, int* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return false;
  char* end = nullptr;
  long value = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || value <= 0 || value > 65535) return false;
  *host = text.substr(0, colon);
  *port = static_cast<int>(value);
  return true;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

int poll_timeout_ms(Clock::time_point deadline) {
  auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > 3600 * 1000 ? 3600 * 1000 : static_cast<int>(ms);
}

std::string describe_duration(std::chrono::nanoseconds duration) {
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(duration).count();
  char text[32];
  if (ms < 1000)
    snprintf(text, sizeof text, "%lld ms", static_cast<long long>(ms));
  else if (ms % 1000 == 0)
    snprintf(text, sizeof text, "%lld s", static_cast<long long>(ms / 1000));
  else
    snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms) / 1000.0);
  return text;
}

}  // namespace hvd::control
