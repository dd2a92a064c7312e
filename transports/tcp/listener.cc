#include "listener.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/host_access.h"
#include "connection.h"
#include "horovod_plugin/boundary.h"
#include "sockets.h"
#include "wire.h"

namespace hvd_tcp {

Listener::Listener(Transport& transport, const Options& options)
    : t_(transport) {
  try {
    if (options.interfaces.empty()) {
      // One socket on every interface; it advertises each of them.
      int fd = -1;
      try {
        fd = listen_on(any_address(AF_INET6));
      } catch (const hvd_plugin::Failure&) {
        fd = listen_on(any_address(AF_INET));
      }
      fds_.push_back(fd);
      uint16_t port = bound_address(fd).port();
      bool v6 = bound_address(fd).family() == AF_INET6;
      for (Address a : advertised_addresses()) {
        if (a.family() == AF_INET6 && !v6) continue;
        a.set_port(port);
        addresses_.push_back(a);
      }
    } else {
      for (const std::string& name : options.interfaces) {
        for (const Address& a : interface_addresses(name)) {
          int fd = listen_on(a);
          fds_.push_back(fd);
          addresses_.push_back(bound_address(fd));
        }
      }
    }
    for (int fd : fds_) {
      sources_.push_back(std::make_unique<EventSource>(
          EventSource{EventSource::kListener, this}));
      t_.watch(fd, sources_.back().get(), EPOLLIN);
    }
  } catch (...) {
    for (int fd : fds_) {
      t_.unwatch(fd);
      ::close(fd);
    }
    throw;
  }
}

Listener::~Listener() {
  for (int fd : fds_) {
    t_.unwatch(fd);
    ::close(fd);
  }
  for (auto& in : incoming_) {
    t_.unwatch(in->fd);
    ::close(in->fd);
  }
  for (Connection* c : fresh_) {
    gathering_.erase(c->key());
    delete c;
  }
  for (auto& [key, c] : gathering_) c->listener_gone();
}

void Listener::fill_handle(void* handle) const {
  Handle h;
  write_handle(addresses_, &h);
  std::memcpy(handle, &h, sizeof(h));
}

void Listener::pump() {
  for (int fd : fds_) {
    for (int s = accept_one(fd); s >= 0; s = accept_one(fd)) {
      // Connections that never send their hello cannot pile up: past the
      // limit the oldest goes (a rank sends its hello at once).
      if (incoming_.size() >= kMaxIncoming) {
        hvd_transport_common::log(
            t_.host(), HVD_LOG_WARNING,
            "tcp: closed an incoming connection still without a hello after " +
                std::to_string(kMaxIncoming) + " newer ones");
        t_.unwatch(incoming_.front()->fd);
        ::close(incoming_.front()->fd);
        incoming_.erase(incoming_.begin());
      }
      auto in = std::make_unique<Incoming>();
      in->fd = s;
      in->source.owner = this;
      t_.watch(s, &in->source, EPOLLIN);
      incoming_.push_back(std::move(in));
    }
  }
  for (size_t i = 0; i < incoming_.size();) {
    Incoming& in = *incoming_[i];
    long n = recv_some(in.fd, reinterpret_cast<uint8_t*>(&in.hello) + in.got,
                       sizeof(Hello) - in.got);
    bool drop = n < 0;
    std::string problem = drop ? "closed before its hello" : "";
    if (n > 0) in.got += static_cast<size_t>(n);
    bool whole = !drop && in.got == sizeof(Hello);
    if (whole) {
      const Hello& h = in.hello;
      problem = hello_problem(h);
      drop = !problem.empty();
      if (!drop) {
        Connection*& conn = gathering_[h.conn_key];
        if (conn == nullptr) {
          conn = new Connection(t_, this, h);
          fresh_.push_back(conn);
        }
        t_.unwatch(in.fd);
        drop = !conn->attach(in.fd, h);
        if (drop) problem = "its hello does not match the connection's others";
        if (!drop) in.fd = -1;  // the connection has it now
        if (conn->gathered()) gathering_.erase(h.conn_key);
      }
    }
    if (drop) {
      hvd_transport_common::log(t_.host(), HVD_LOG_DEBUG,
                                "tcp: dropped an incoming connection: " +
                                    problem);
      if (in.fd >= 0) {
        t_.unwatch(in.fd);
        ::close(in.fd);
      }
    }
    if (whole || drop) {
      incoming_.erase(incoming_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

Connection* Listener::take() {
  pump();
  if (fresh_.empty()) return nullptr;
  Connection* c = fresh_.front();
  fresh_.pop_front();
  return c;
}

void Listener::forget(Connection* conn) {
  for (auto it = gathering_.begin(); it != gathering_.end(); ++it) {
    if (it->second == conn) {
      gathering_.erase(it);
      return;
    }
  }
}

}  // namespace hvd_tcp
