// The hvd_host table a plugin receives, exercised through its C functions.
#include "plugin/host_services.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "config/config.h"
#include "device/device.h"

namespace hvd {
namespace {

namespace fs = std::filesystem;

// A bootstrap of one process set up by hand, its store a map.
class FakeBootstrap : public Bootstrap {
 public:
  FakeBootstrap(int rank, int size) : rank_(rank), size_(size) {
    layout_.local_rank = 1;
    layout_.local_size = 2;
    layout_.cross_rank = 3;
    layout_.cross_size = 4;
    layout_.hostname = "node-7";
  }
  std::string backend() const override { return "fake"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void put(const std::string& key, const std::vector<uint8_t>& value) override {
    store[{rank_, key}] = value;
  }
  std::vector<uint8_t> get(int rank, const std::string& key,
                           std::chrono::milliseconds timeout) override {
    last_timeout = timeout;
    auto it = store.find({rank, key});
    if (it == store.end()) {
      throw Error(HVD_ERR_TIMEOUT,
                  "no key '" + key + "' from rank " + std::to_string(rank));
    }
    return it->second;
  }
  std::map<std::pair<int, std::string>, std::vector<uint8_t>> store;
  std::chrono::milliseconds last_timeout{0};

 private:
  int rank_, size_;
};

class Recorder : public TimelineHooks {
 public:
  void begin(const std::string& row, const std::string& phase) override {
    events.push_back("begin " + row + " " + phase);
  }
  void end(const std::string& row, const std::string& phase) override {
    events.push_back("end " + row + " " + phase);
  }
  std::vector<std::string> events;
};

class HostServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hvd-host-services-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    file_ = dir_ + "/horovod.toml";
    std::ofstream(file_) << "[transport.fake]\n"
                            "interfaces = \"eth0\"\n"
                            "depth = 3\n";
    ConfigLoadOptions options;
    options.path = file_;
    options.environment = &environment_;
    options.working_directory = dir_;
    options.system_directory = dir_;
    config_ = Config::load(options);
  }
  void TearDown() override { fs::remove_all(dir_); }

  HostServicesOptions options(Bootstrap* bootstrap) {
    HostServicesOptions o;
    o.kind = HVD_PLUGIN_TRANSPORT;
    o.name = "fake";
    o.config = &config_;
    o.bootstrap = bootstrap;
    return o;
  }

  std::map<std::string, std::string> environment_;
  std::string dir_, file_;
  Config config_;
};

TEST_F(HostServicesTest, TableDescribesTheWorld) {
  FakeBootstrap bootstrap(0, 1);
  HostServicesOptions o = options(&bootstrap);
  o.epoch = 42;
  HostServices services(o);
  const hvd_host* host = services.table();
  EXPECT_EQ(host->struct_size, sizeof(hvd_host));
  EXPECT_EQ(host->abi_major, static_cast<uint32_t>(HVD_ABI_VERSION_MAJOR));
  EXPECT_EQ(host->abi_minor, static_cast<uint32_t>(HVD_ABI_VERSION_MINOR));
  ASSERT_NE(host->world, nullptr);
  EXPECT_EQ(host->world->struct_size, sizeof(hvd_world));
  EXPECT_EQ(host->world->rank, 0);
  EXPECT_EQ(host->world->size, 1);
  EXPECT_EQ(host->world->local_rank, 1);
  EXPECT_EQ(host->world->local_size, 2);
  EXPECT_EQ(host->world->cross_rank, 3);
  EXPECT_EQ(host->world->cross_size, 4);
  EXPECT_EQ(host->world->epoch, 42u);
  EXPECT_STREQ(host->world->hostname, "node-7");
  EXPECT_EQ(host->device, device_api());
}

TEST_F(HostServicesTest, ConfigIsThePluginsOwnTable) {
  HostServices services(options(nullptr));
  const hvd_host* host = services.table();
  ASSERT_NE(host->config, nullptr);
  EXPECT_STREQ(host->config->name, "transport.fake");
  std::map<std::string, const hvd_config_value*> values;
  for (size_t i = 0; i < host->config->count; ++i) {
    values[host->config->values[i].key] = &host->config->values[i];
  }
  ASSERT_TRUE(values.count("interfaces"));
  EXPECT_STREQ(values["interfaces"]->string_value, "eth0");
  ASSERT_TRUE(values.count("depth"));
  EXPECT_EQ(values["depth"]->int_value, 3);

  testing::internal::CaptureStderr();
  EXPECT_EQ(host->config_error(host->ctx, "depth", "must be a power of two"),
            HVD_ERR_CONFIG);
  std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_NE(logged.find(file_ + ":3:"), std::string::npos) << logged;
  EXPECT_NE(logged.find("transport.fake.depth"), std::string::npos) << logged;
  EXPECT_NE(logged.find("must be a power of two"), std::string::npos) << logged;
}

TEST_F(HostServicesTest, LogLinesNameThePlugin) {
  HostServices services(options(nullptr));
  const hvd_host* host = services.table();
  hvd_log_level saved = log_level();
  set_log_level(HVD_LOG_INFO);
  EXPECT_EQ(host->log_enabled(host->ctx, HVD_LOG_DEBUG), 0);
  EXPECT_EQ(host->log_enabled(host->ctx, HVD_LOG_WARNING), 1);
  testing::internal::CaptureStderr();
  host->log(host->ctx, HVD_LOG_WARNING, "link is slow");
  host->log(host->ctx, HVD_LOG_DEBUG, "not shown");
  host->log(host->ctx, HVD_LOG_ERROR, nullptr);
  std::string logged = testing::internal::GetCapturedStderr();
  set_log_level(saved);
  EXPECT_NE(logged.find("transport fake] link is slow"), std::string::npos)
      << logged;
  EXPECT_EQ(logged.find("not shown"), std::string::npos) << logged;
}

TEST_F(HostServicesTest, BootstrapKeysAreNamespacedPerPlugin) {
  FakeBootstrap bootstrap(0, 1);
  HostServices services(options(&bootstrap));
  const hvd_host* host = services.table();
  const char address[] = "10.0.0.1:5000";
  ASSERT_EQ(host->bootstrap_put(host->ctx, "addr", address, sizeof address),
            HVD_OK);
  ASSERT_EQ(bootstrap.store.count({0, "transport.fake/addr"}), 1u);

  char buffer[64];
  size_t len = sizeof buffer;
  ASSERT_EQ(host->bootstrap_get(host->ctx, 0, "addr", buffer, &len, 250),
            HVD_OK);
  EXPECT_EQ(len, sizeof address);
  EXPECT_STREQ(buffer, address);
  EXPECT_EQ(bootstrap.last_timeout, std::chrono::milliseconds(250));

  char tiny[4];
  len = sizeof tiny;
  EXPECT_EQ(host->bootstrap_get(host->ctx, 0, "addr", tiny, &len, 0),
            HVD_ERR_TRUNCATED);
  EXPECT_EQ(len, sizeof address);

  len = sizeof buffer;
  EXPECT_EQ(host->bootstrap_get(host->ctx, 0, "missing", buffer, &len, 10),
            HVD_ERR_TIMEOUT);

  const uint32_t mine = 0xabcd;
  uint32_t all = 0;
  EXPECT_EQ(host->bootstrap_allgather(host->ctx, &mine, sizeof mine, &all),
            HVD_OK);
  EXPECT_EQ(all, mine);
  EXPECT_EQ(host->bootstrap_barrier(host->ctx), HVD_OK);
}

TEST_F(HostServicesTest, WithoutBootstrapCallsFailAndWorldIsOneRank) {
  HostServices services(options(nullptr));
  const hvd_host* host = services.table();
  EXPECT_EQ(host->world->rank, 0);
  EXPECT_EQ(host->world->size, 1);
  char hostname[256] = "";
  gethostname(hostname, sizeof hostname - 1);
  EXPECT_STREQ(host->world->hostname, hostname);
  size_t len = 0;
  EXPECT_EQ(host->bootstrap_put(host->ctx, "k", "", 0), HVD_ERR_UNSUPPORTED);
  EXPECT_EQ(host->bootstrap_get(host->ctx, 0, "k", nullptr, &len, 0),
            HVD_ERR_UNSUPPORTED);
  EXPECT_EQ(host->bootstrap_barrier(host->ctx), HVD_ERR_UNSUPPORTED);
}

TEST_F(HostServicesTest, MemoryIsAligned) {
  HostServices services(options(nullptr));
  const hvd_host* host = services.table();
  for (size_t alignment : {1, 8, 64, 4096}) {
    void* p = host->mem_alloc(host->ctx, 100, alignment);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
    std::memset(p, 1, 100);
    host->mem_free(host->ctx, p);
  }
  EXPECT_EQ(host->mem_alloc(host->ctx, 100, 48), nullptr);
  void* empty = host->mem_alloc(host->ctx, 0, 16);
  EXPECT_NE(empty, nullptr);
  host->mem_free(host->ctx, empty);
  host->mem_free(host->ctx, nullptr);
}

TEST_F(HostServicesTest, DeviceAndTimelineAreTheGivenOnes) {
  Recorder recorder;
  hvd_device_api device{};
  device.struct_size = sizeof device;
  HostServicesOptions o = options(nullptr);
  o.device = &device;
  o.timeline = &recorder;
  HostServices services(o);
  const hvd_host* host = services.table();
  EXPECT_EQ(host->device, &device);
  host->timeline_begin(host->ctx, "grad.w1", "SEND");
  host->timeline_end(host->ctx, "grad.w1", "SEND");
  EXPECT_EQ(recorder.events, (std::vector<std::string>{"begin grad.w1 SEND",
                                                       "end grad.w1 SEND"}));

  HostServices quiet(options(nullptr));
  quiet.table()->timeline_begin(quiet.table()->ctx, "row", "phase");
  quiet.table()->timeline_end(quiet.table()->ctx, "row", "phase");
}

TEST_F(HostServicesTest, NeedsAConfiguration) {
  HostServicesOptions o = options(nullptr);
  o.config = nullptr;
  EXPECT_THROW(HostServices{o}, Error);
}

}  // namespace
}  // namespace hvd
