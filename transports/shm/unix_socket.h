// AF_UNIX SOCK_SEQPACKET sockets in the abstract namespace: the handshake of
// a connection (with file descriptors passed along), and afterwards the way
// each end learns that the other is gone (EOF or POLLHUP when its process
// exits, however it exits). All non-blocking.
#pragma once

#include <cstddef>
#include <string>

namespace hvd_shm {

// A listening socket bound to `name` (abstract: no file is created).
int listen_socket(const std::string& name);

// Connects to `name`. Returns the socket, or -1 with errno EAGAIN when the
// listener's backlog is full (try again). Throws on other failures
// (ECONNREFUSED: nobody listens there).
int connect_socket(const std::string& name);

// A connection waiting on `listen_fd`, or -1 when none is.
int accept_socket(int listen_fd);

// Sends one message carrying `fds`. false: the socket is full, try again.
// Throws when the peer is gone.
bool send_message(int fd, const void* data, size_t bytes, const int* fds,
                  int fd_count);

// Receives one message and up to `max_fds` descriptors (close-on-exec).
// Returns its size, 0 at end of stream, -1 when none is waiting. Throws on
// errors (ECONNRESET: the peer is gone).
long receive_message(int fd, void* data, size_t bytes, int* fds, int max_fds,
                     int* fd_count);

}  // namespace hvd_shm
