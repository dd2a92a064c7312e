#include "runtime/generation_bootstrap.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "common/error.h"

namespace hvd::runtime {
namespace {

using Store = std::map<std::string, std::vector<uint8_t>>;

// A one-rank bootstrap over a store that outlives it, like the launcher's.
class StoreBootstrap : public Bootstrap {
 public:
  explicit StoreBootstrap(std::shared_ptr<Store> store)
      : store_(std::move(store)) {}
  std::string backend() const override { return "store"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void put(const std::string& key, const std::vector<uint8_t>& v) override {
    (*store_)[key] = v;
  }
  std::vector<uint8_t> get(int, const std::string& key,
                           std::chrono::milliseconds) override {
    auto it = store_->find(key);
    if (it == store_->end()) throw Error(HVD_ERR_TIMEOUT, "no " + key);
    return it->second;
  }

 private:
  std::shared_ptr<Store> store_;
};

TEST(GenerationBootstrap, AGenerationNeverSeesAnEarlierOnesKeys) {
  auto store = std::make_shared<Store>();
  {
    GenerationBootstrap first(std::make_unique<StoreBootstrap>(store), 0);
    first.put("control.addr", {1});
    EXPECT_EQ(first.get(0, "control.addr", {}), (std::vector<uint8_t>{1}));
    EXPECT_EQ(first.backend(), "store");
    EXPECT_EQ(first.size(), 1);
  }
  GenerationBootstrap second(std::make_unique<StoreBootstrap>(store), 1);
  EXPECT_THROW(second.get(0, "control.addr", {}), Error);
  second.put("control.addr", {2});
  EXPECT_EQ(second.get(0, "control.addr", {}), (std::vector<uint8_t>{2}));
  EXPECT_EQ(store->count("hvd.init.0.control.addr"), 1u);
  EXPECT_EQ(store->count("hvd.init.1.control.addr"), 1u);
}

}  // namespace
}  // namespace hvd::runtime
