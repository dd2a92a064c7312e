// The C table of a built-in transport, written once for all of them. A
// plugin describes its implementation with an Impl type:
//
//   struct Impl {
//     using Transport = ...; using Listener = ...;
//     using Connection = ...; using Request = ...;
//     static constexpr const char* kName = "shm";
//     static constexpr uint32_t kThreading = HVD_THREADING_...;  // abi.h
//     static Transport& transport_of(Listener*);
//     static Transport& transport_of(Connection*);
//     static hvd_status conn_test(Connection*);
//     static int32_t peer_rank(Connection*);
//     static void check_host(const hvd_host*);  // optional: throws if unusable
//   };
//
// Without check_host, init() refuses a host table that lacks a v1.0 field
// (check_transport_host).
//
// Transport(const hvd_host*), listen(handle, Listener**), accept(Listener*,
// info, Connection**), connect(handle, info, Connection**), properties(),
// close_connection(), close_listener(), progress(), wait_fd(), wait_arm(),
// abort() and Request::transport->test() are used as every transport has
// them. Memory registration and the data calls differ between transports, so
// the plugin writes those (with Table::as_transport, as_conn, require and
// post_request) and hands them to api(), with its extensions (its describe
// text, its collectives) where it has any; the optional one-sided calls it
// fills in itself or leaves NULL.
#pragma once

#include <cstdint>
#include <string>

#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/extension_chain.h"
#include "horovod_plugin/fault_hook.h"
#include "horovod_plugin/host_check.h"

namespace hvd_plugin {

template <typename Impl>
class TransportTable {
 public:
  using Transport = typename Impl::Transport;
  using Listener = typename Impl::Listener;
  using Connection = typename Impl::Connection;
  using Request = typename Impl::Request;

  static Transport* as_transport(hvd_transport* t) {
    if (t == nullptr) invalid("transport");
    return reinterpret_cast<Transport*>(t);
  }
  static Connection* as_conn(hvd_conn* c) {
    if (c == nullptr) invalid("connection");
    return reinterpret_cast<Connection*>(c);
  }
  template <typename T>
  static void require(T* pointer, const char* what) {
    if (pointer == nullptr) invalid(what);
  }

  // The shape of a data call on a connection: checks `c` and `req`, runs
  // `post(Connection*, Request**)` and hands its request out when it
  // returns HVD_OK. Guarded: safe to return across the C ABI. A fault
  // armed by a test (fault_hook.h) strikes here.
  template <typename Post>
  static hvd_status post_request(hvd_conn* c, hvd_request** req, Post&& post) {
    return guarded([&] {
      require(req, "request");
      Connection* conn = as_conn(c);
      fault::fault_point(Impl::transport_of(conn));
      Request* r = nullptr;
      hvd_status s = post(conn, &r);
      if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
      return s;
    });
  }

  struct DataCalls {
    decltype(hvd_transport_api::mr_reg) mr_reg;
    decltype(hvd_transport_api::mr_dereg) mr_dereg;
    decltype(hvd_transport_api::isend) isend;
    decltype(hvd_transport_api::irecv) irecv;
  };

  // The table with the shared entry points and the plugin's data calls; the
  // optional one-sided entries are NULL.
  static constexpr hvd_transport_api api(const DataCalls& data) {
    hvd_transport_api a{};
    a.struct_size = HVD_STRUCT_SIZE(hvd_transport_api, threading);
    a.ext = nullptr;
    a.kind = HVD_PLUGIN_TRANSPORT;
    a.abi_major = HVD_ABI_VERSION_MAJOR;
    a.abi_minor = HVD_ABI_VERSION_MINOR;
    a.name = Impl::kName;
    a.version = "1.0";
    a.init = init;
    a.finalize = finalize;
    a.get_properties = get_properties;
    a.last_error = last_error_of;
    a.listen = listen;
    a.accept = accept;
    a.connect = connect;
    a.conn_test = conn_test;
    a.conn_peer = conn_peer;
    a.conn_close = conn_close;
    a.listener_close = listener_close;
    a.mr_reg = data.mr_reg;
    a.mr_dereg = data.mr_dereg;
    a.isend = data.isend;
    a.irecv = data.irecv;
    a.test = test;
    a.progress = progress;
    a.wait_fd = wait_fd;
    a.wait_arm = wait_arm;
    a.abort = abort;
    a.threading = Impl::kThreading;
    return a;
  }

  // The same with the plugin's extensions chained to it (held by this
  // class: one table per plugin).
  static hvd_transport_api api(const DataCalls& data,
                               const TransportExtensions& extensions) {
    hvd_transport_api a = api(data);
    a.ext = extensions_.link(extensions);
    return a;
  }

 private:
  static inline ExtensionChain extensions_;

  [[noreturn]] static void invalid(const char* what) {
    fail(HVD_ERR_INVALID_ARGUMENT,
         std::string(Impl::kName) + ": " + what + " is NULL");
  }

  static hvd_status init(const hvd_host* host, hvd_transport** out) {
    return guarded([&] {
      require(out, "out");
      if constexpr (requires { Impl::check_host(host); }) {
        Impl::check_host(host);
      } else {
        check_transport_host(host);
      }
      *out = reinterpret_cast<hvd_transport*>(new Transport(host));
      return HVD_OK;
    });
  }

  static hvd_status finalize(hvd_transport* t) {
    return guarded([&] {
      delete as_transport(t);
      return HVD_OK;
    });
  }

  static hvd_status get_properties(hvd_transport* t,
                                   hvd_transport_properties* props) {
    return guarded([&] {
      require(props, "properties");
      as_transport(t)->properties(props);
      return HVD_OK;
    });
  }

  static const char* last_error_of(hvd_transport*) { return last_error(); }

  static hvd_status listen(hvd_transport* t, void* handle, hvd_listener** out) {
    return guarded([&] {
      require(handle, "handle");
      require(out, "out");
      Listener* l = nullptr;
      hvd_status s = as_transport(t)->listen(handle, &l);
      if (s == HVD_OK) *out = reinterpret_cast<hvd_listener*>(l);
      return s;
    });
  }

  static hvd_status accept(hvd_listener* l, const hvd_conn_info* info,
                           hvd_conn** out) {
    return guarded([&] {
      require(l, "listener");
      require(out, "out");
      auto* listener = reinterpret_cast<Listener*>(l);
      Connection* c = nullptr;
      hvd_status s = Impl::transport_of(listener).accept(listener, info, &c);
      if (s == HVD_OK) *out = reinterpret_cast<hvd_conn*>(c);
      return s;
    });
  }

  static hvd_status connect(hvd_transport* t, const void* handle,
                            const hvd_conn_info* info, hvd_conn** out) {
    return guarded([&] {
      require(handle, "handle");
      require(out, "out");
      Connection* c = nullptr;
      hvd_status s = as_transport(t)->connect(handle, info, &c);
      if (s == HVD_OK) *out = reinterpret_cast<hvd_conn*>(c);
      return s;
    });
  }

  static hvd_status conn_test(hvd_conn* c) {
    return guarded([&] { return Impl::conn_test(as_conn(c)); });
  }

  static int32_t conn_peer(hvd_conn* c) {
    return c == nullptr ? -1
                        : Impl::peer_rank(reinterpret_cast<Connection*>(c));
  }

  static hvd_status conn_close(hvd_conn* c) {
    return guarded([&] {
      Connection* conn = as_conn(c);
      Impl::transport_of(conn).close_connection(conn);
      return HVD_OK;
    });
  }

  static hvd_status listener_close(hvd_listener* l) {
    return guarded([&] {
      require(l, "listener");
      auto* listener = reinterpret_cast<Listener*>(l);
      Impl::transport_of(listener).close_listener(listener);
      return HVD_OK;
    });
  }

  static hvd_status test(hvd_request* req, int32_t* done, hvd_completion* out) {
    return guarded([&] {
      require(req, "request");
      require(done, "done");
      auto* r = reinterpret_cast<Request*>(req);
      return r->transport->test(r, done, out);
    });
  }

  static hvd_status progress(hvd_transport* t) {
    return guarded([&] {
      as_transport(t)->progress();
      return HVD_OK;
    });
  }

  static int wait_fd(hvd_transport* t) {
    return t == nullptr ? -1 : reinterpret_cast<Transport*>(t)->wait_fd();
  }

  static hvd_status wait_arm(hvd_transport* t) {
    return guarded([&] { return as_transport(t)->wait_arm(); });
  }

  static hvd_status abort(hvd_transport* t, hvd_status reason, int32_t peer) {
    return guarded([&] {
      as_transport(t)->abort(reason, peer);
      return HVD_OK;
    });
  }
};

}  // namespace hvd_plugin
