// Non-blocking TCP sockets with TCP_NODELAY.
#pragma once

#include <sys/uio.h>

#include <string>
#include <vector>

#include "addresses.h"

namespace hvd_tcp {

// A listening socket on `address` (port 0: any free port). The unspecified
// IPv6 address also takes IPv4 connections.
int listen_on(const Address& address);
// The address a socket is bound to.
Address bound_address(int fd);
// The unspecified address of `family`, port 0.
Address any_address(int family);

// Starts connecting to `to`, from `from` when given. Returns the socket; a
// failure that is known at once comes back in *error (the socket is -1).
int start_connect(const Address& to, const Address* from, int* error);
// HVD_AGAIN-style: -1 while the connect is still in progress, else 0 or the
// errno it failed with.
int connect_result(int fd);

// A connection waiting on a listening socket, or -1.
int accept_one(int listen_fd);

// sendmsg / recv without SIGPIPE. Return the bytes moved, 0 for "would
// block", and -1 with errno for a failure; recv_some returns -2 at end of
// stream.
long send_some(int fd, const iovec* iov, int count);
long recv_some(int fd, void* buf, size_t bytes);
// Whether the peer has closed (a zero-byte peek), without consuming data.
bool at_end(int fd);

// Whether both ends of a connected socket are addresses of this host.
bool same_host(int fd);
// Sets the socket's congestion control algorithm; false (errno) when the
// kernel refuses.
bool set_congestion_control(int fd, const std::string& name);
// The algorithms the kernel has (empty when it does not say).
std::vector<std::string> congestion_controls();

}  // namespace hvd_tcp
