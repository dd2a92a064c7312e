// Sends and receives from memory registered with mr_reg (ucp_mem_map), the
// path the conformance suite does not take: two instances in this process,
// connected to each other, with a bootstrap store kept in memory.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "horovod/transport.h"

namespace {

std::map<std::string, std::vector<uint8_t>> store;

hvd_status put(void*, const char* key, const void* value, size_t len) {
  auto* bytes = static_cast<const uint8_t*>(value);
  store[key].assign(bytes, bytes + len);
  return HVD_OK;
}

hvd_status get(void*, int32_t, const char* key, void* value, size_t* len,
               int64_t) {
  auto it = store.find(key);
  if (it == store.end()) return HVD_ERR_NOT_FOUND;
  bool fits = *len >= it->second.size();
  *len = it->second.size();
  if (!fits) return HVD_ERR_TRUNCATED;
  std::memcpy(value, it->second.data(), *len);
  return HVD_OK;
}

class Registration : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = dlopen(HVD_TEST_UCX_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    auto entry = reinterpret_cast<hvd_transport_get_api_fn>(
        dlsym(library_, HVD_TRANSPORT_ENTRY));
    ASSERT_NE(entry, nullptr);
    api_ = entry(HVD_ABI_VERSION_MAJOR, HVD_ABI_VERSION_MINOR);
    ASSERT_NE(api_, nullptr);
    for (int rank = 0; rank < 2; ++rank) {
      worlds_[rank] = hvd_world{
          sizeof(hvd_world), rank, 2, rank, 2, 0, 1, kEpoch, "localhost"};
      hosts_[rank] = hvd_host{};
      hosts_[rank].struct_size = sizeof(hvd_host);
      hosts_[rank].abi_major = HVD_ABI_VERSION_MAJOR;
      hosts_[rank].abi_minor = HVD_ABI_VERSION_MINOR;
      hosts_[rank].config = &table_;
      hosts_[rank].world = &worlds_[rank];
      hosts_[rank].bootstrap_put = put;
      hosts_[rank].bootstrap_get = get;
      ASSERT_EQ(api_->init(&hosts_[rank], &t_[rank]), HVD_OK)
          << api_->last_error(nullptr);
    }
    uint8_t handle[HVD_TRANSPORT_HANDLE_MAX] = {};
    ASSERT_EQ(api_->listen(t_[0], handle, &listener_), HVD_OK);
    hvd_conn_info from1{sizeof(hvd_conn_info), 1, 0, kEpoch};
    ASSERT_EQ(api_->connect(t_[1], handle, &from1, &c_[1]), HVD_OK);
    hvd_conn_info at0{sizeof(hvd_conn_info), 0, -1, kEpoch};
    hvd_status status[2] = {HVD_AGAIN, HVD_AGAIN};
    while (status[0] == HVD_AGAIN || status[1] == HVD_AGAIN) {
      if (c_[0] == nullptr) {
        hvd_status s = api_->accept(listener_, &at0, &c_[0]);
        ASSERT_TRUE(s == HVD_OK || s == HVD_AGAIN) << api_->last_error(t_[0]);
      }
      if (c_[0] != nullptr && status[0] == HVD_AGAIN) {
        status[0] = api_->conn_test(c_[0]);
      }
      if (status[1] == HVD_AGAIN) status[1] = api_->conn_test(c_[1]);
    }
    ASSERT_EQ(status[0], HVD_OK) << api_->last_error(t_[0]);
    ASSERT_EQ(status[1], HVD_OK) << api_->last_error(t_[1]);
  }

  void TearDown() override {
    for (int rank = 0; rank < 2; ++rank) {
      if (c_[rank] != nullptr) api_->conn_close(c_[rank]);
    }
    if (listener_ != nullptr) api_->listener_close(listener_);
    for (int rank = 0; rank < 2; ++rank) {
      if (t_[rank] != nullptr) api_->finalize(t_[rank]);
    }
    if (library_ != nullptr) dlclose(library_);
  }

  static constexpr uint64_t kEpoch = 3;
  void* library_ = nullptr;
  const hvd_transport_api* api_ = nullptr;
  hvd_config_table table_{sizeof(hvd_config_table), "transport.ucx", nullptr,
                          0};
  hvd_world worlds_[2];
  hvd_host hosts_[2];
  hvd_transport* t_[2] = {};
  hvd_listener* listener_ = nullptr;
  hvd_conn* c_[2] = {};
};

TEST_F(Registration, RegisteredBuffersCarryEveryProtocol) {
  // Small (eager), medium and large (rendezvous) messages.
  for (size_t bytes : {size_t{100}, size_t{1} << 20, size_t{32} << 20}) {
    std::vector<uint8_t> out(bytes), in(bytes);
    for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(i * 7 + 3);
    hvd_device host{HVD_MEM_HOST, 0};
    hvd_mr *out_mr = nullptr, *in_mr = nullptr;
    ASSERT_EQ(api_->mr_reg(t_[1], out.data(), bytes, host, &out_mr), HVD_OK)
        << api_->last_error(t_[1]);
    ASSERT_EQ(api_->mr_reg(t_[0], in.data(), bytes, host, &in_mr), HVD_OK)
        << api_->last_error(t_[0]);
    hvd_request *send = nullptr, *recv = nullptr;
    ASSERT_EQ(api_->irecv(c_[0], in.data(), bytes, 5, in_mr, &recv), HVD_OK);
    ASSERT_EQ(api_->isend(c_[1], out.data(), bytes, 5, out_mr, &send), HVD_OK);
    int32_t send_done = 0, recv_done = 0;
    hvd_completion sent{}, got{};
    sent.struct_size = got.struct_size = sizeof(hvd_completion);
    while (!send_done || !recv_done) {
      if (!send_done) {
        ASSERT_EQ(api_->test(send, &send_done, &sent), HVD_OK);
      }
      if (!recv_done) {
        ASSERT_EQ(api_->test(recv, &recv_done, &got), HVD_OK);
      }
    }
    EXPECT_EQ(sent.status, HVD_OK);
    EXPECT_EQ(got.status, HVD_OK);
    EXPECT_EQ(got.bytes, bytes);
    EXPECT_TRUE(in == out) << bytes << " bytes arrived wrong";
    EXPECT_EQ(api_->mr_dereg(t_[1], out_mr), HVD_OK);
    EXPECT_EQ(api_->mr_dereg(t_[0], in_mr), HVD_OK);
  }
}

TEST_F(Registration, EmptyRangeNeedsNoMapping) {
  hvd_mr* mr = nullptr;
  ASSERT_EQ(api_->mr_reg(t_[0], nullptr, 0, hvd_device{HVD_MEM_HOST, 0}, &mr),
            HVD_OK);
  EXPECT_EQ(api_->mr_dereg(t_[0], mr), HVD_OK);
}

}  // namespace
