// Sockets for the control plane: which address to listen on and publish,
// listening, connecting with a deadline, and small fd helpers. Errors throw
// hvd::Error (HVD_ERR_SYSTEM, HVD_ERR_CONFIG or HVD_ERR_TIMEOUT) naming the
// address or interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hvd::control {

using Clock = std::chrono::steady_clock;

// Clock::now() as nanoseconds, for atomics.
int64_t now_ns();

struct ListenAddress {
  std::string bind_ip;     // what the listener binds
  std::string publish_ip;  // what other ranks connect to
};

// `interfaces` (HOROVOD_NETWORK_INTERFACES): the first listed interface that
// has an IPv4 address is bound and published. Otherwise, when every rank is
// on this host, loopback; otherwise bind all addresses and publish the
// non-loopback IPv4 address `hostname` resolves to, else the first such
// address of an interface that is up.
ListenAddress choose_listen_address(const std::vector<std::string>& interfaces,
                                    bool all_ranks_local,
                                    const std::string& hostname);

// A listening TCP socket on an ephemeral port of `ip`; returns the fd and
// sets *port.
int listen_tcp(const std::string& ip, int backlog, int* port);

// One attempt to connect to ip:port, waiting up to `deadline`. Returns a
// non-blocking fd with TCP_NODELAY set, or -1 when refused, reset or not
// answered (worth another try); throws on other errors.
int connect_tcp(const std::string& ip, int port, Clock::time_point deadline,
                const std::string& what);

// Accepts one pending connection (non-blocking, TCP_NODELAY), or -1 when
// none is waiting.
int accept_tcp(int listen_fd);

void set_nonblocking(int fd);
void set_nodelay(int fd);

// Splits "host:port"; false when malformed.
bool split_host_port(const std::string& text, std::string* host, int* port);

// Milliseconds from now until `deadline` for poll(): 0 when past, rounded
// up so a wait never returns just before its deadline.
int poll_timeout_ms(Clock::time_point deadline);

// "10 s", "300 ms", "1.5 s": for messages.
std::string describe_duration(std::chrono::nanoseconds duration);

}  // namespace hvd::control
