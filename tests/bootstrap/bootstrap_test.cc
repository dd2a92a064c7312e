// The bootstrap of a whole job, run the same on every rank (so every test is
// collective): `horovodrun -np 3 bootstrap_test` (rendezvous),
// `mpirun -np 2 bootstrap_test` (PMIx), or plain (single).
#include "bootstrap/bootstrap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "common/error.h"
#include "config/config.h"

namespace hvd {
namespace {

using std::chrono::milliseconds;

Bootstrap* g_world = nullptr;
constexpr milliseconds kLong{20000};

std::vector<uint8_t> bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::string text(const std::vector<uint8_t>& b) {
  return std::string(b.begin(), b.end());
}

int env_or(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

bool env_set(const char* name) {
  const char* v = getenv(name);
  return v && *v;
}

std::string expected_backend() {
  if (env_set("HOROVOD_RENDEZVOUS_ADDR")) return "rendezvous";
  if (env_set("PMIX_RANK")) return "pmix";
  return "single";
}

// A Config read from a TOML file written for the test.
class TomlFile {
 public:
  explicit TomlFile(const std::string& contents) {
    char name[] = "/tmp/hvd-bootstrap-test-XXXXXX";
    int fd = mkstemp(name);
    path_ = name;
    std::ofstream(path_) << contents;
    close(fd);
  }
  ~TomlFile() { unlink(path_.c_str()); }
  Config load() const {
    ConfigLoadOptions options;
    options.path = path_;
    return Config::load(options);
  }

 private:
  std::string path_;
};

Bootstrap& world() { return *g_world; }

TEST(Bootstrap, BackendFollowsEnvironment) {
  EXPECT_EQ(world().backend(), expected_backend());
}

TEST(Bootstrap, RankAndSize) {
  Bootstrap& w = world();
  ASSERT_GE(w.size(), 1);
  ASSERT_GE(w.rank(), 0);
  ASSERT_LT(w.rank(), w.size());
  if (w.backend() == "rendezvous") {
    EXPECT_EQ(w.rank(), env_or("HOROVOD_RANK", -1));
    EXPECT_EQ(w.size(), env_or("HOROVOD_SIZE", -1));
  } else if (w.backend() == "pmix") {
    EXPECT_EQ(w.rank(), env_or("PMIX_RANK", -1));
    EXPECT_EQ(w.size(), env_or("OMPI_COMM_WORLD_SIZE", w.size()));
  } else {
    EXPECT_EQ(w.rank(), 0);
    EXPECT_EQ(w.size(), 1);
  }
}

TEST(Bootstrap, LayoutAgreesAcrossRanks) {
  Bootstrap& w = world();
  const HostLayout& l = w.layout();
  ASSERT_EQ(static_cast<int>(l.host_of.size()), w.size());
  EXPECT_EQ(l.host_of[w.rank()], l.cross_rank);
  int local_rank = 0, local_size = 0, hosts = 0;
  for (int r = 0; r < w.size(); ++r) {
    hosts = std::max(hosts, l.host_of[r] + 1);
    if (l.host_of[r] != l.cross_rank) continue;
    if (r < w.rank()) ++local_rank;
    ++local_size;
  }
  EXPECT_EQ(l.local_rank, local_rank);
  EXPECT_EQ(l.local_size, local_size);
  EXPECT_EQ(l.cross_size, hosts);

  // Every rank computed the same host_of, and it groups equal host names.
  std::string mine = l.hostname;
  for (int h : l.host_of) mine += "," + std::to_string(h);
  auto all = w.allgather(bytes(mine));
  for (int r = 0; r < w.size(); ++r) {
    std::string theirs = text(all[r]);
    std::string their_host = theirs.substr(0, theirs.find(','));
    EXPECT_EQ(theirs.substr(theirs.find(',')), mine.substr(mine.find(',')))
        << "rank " << r;
    EXPECT_EQ(their_host == l.hostname, l.host_of[r] == l.cross_rank)
        << "rank " << r << " on " << their_host;
  }

  if (w.backend() == "rendezvous") {
    EXPECT_EQ(l.local_rank, env_or("HOROVOD_LOCAL_RANK", -1));
    EXPECT_EQ(l.local_size, env_or("HOROVOD_LOCAL_SIZE", -1));
    EXPECT_EQ(l.cross_rank, env_or("HOROVOD_CROSS_RANK", -1));
    EXPECT_EQ(l.cross_size, env_or("HOROVOD_CROSS_SIZE", -1));
    EXPECT_EQ(l.hostname, getenv("HOROVOD_HOSTNAME"));
  }
  // Read by the multi-host launcher test.
  printf(
      "layout: rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d "
      "cross_size=%d host=%s\n",
      w.rank(), w.size(), l.local_rank, l.local_size, l.cross_rank,
      l.cross_size, l.hostname.c_str());
  fflush(stdout);
}

TEST(Bootstrap, PutThenGetFromEveryRank) {
  Bootstrap& w = world();
  w.put("greeting", bytes("hello from " + std::to_string(w.rank())));
  for (int r = 0; r < w.size(); ++r) {
    EXPECT_EQ(text(w.get(r, "greeting", kLong)),
              "hello from " + std::to_string(r));
  }
  w.barrier();
}

TEST(Bootstrap, GetWaitsForALatePut) {
  Bootstrap& w = world();
  std::thread late;
  if (w.rank() == 0) {
    late = std::thread([&] {
      std::this_thread::sleep_for(milliseconds(100));
      w.put("late", bytes("finally"));
    });
  }
  std::string got;
  try {
    got = text(w.get(0, "late", kLong));
  } catch (const Error& e) {
    got = e.what();
  }
  if (late.joinable()) late.join();
  EXPECT_EQ(got, "finally");
  w.barrier();
}

TEST(Bootstrap, PutReplacesEarlierValue) {
  Bootstrap& w = world();
  w.put("version", bytes("one"));
  w.barrier();
  EXPECT_EQ(text(w.get((w.rank() + 1) % w.size(), "version", kLong)), "one");
  w.barrier();
  w.put("version", bytes("two"));
  w.barrier();
  EXPECT_EQ(text(w.get((w.rank() + 1) % w.size(), "version", kLong)), "two");
  w.barrier();
}

TEST(Bootstrap, BarrierPublishesEarlierPuts) {
  Bootstrap& w = world();
  w.put("before-barrier", bytes(std::to_string(w.rank())));
  w.barrier();
  for (int r = 0; r < w.size(); ++r) {
    EXPECT_EQ(text(w.get(r, "before-barrier", milliseconds(0))),
              std::to_string(r));
  }
  w.barrier();
}

TEST(Bootstrap, GetWithAnEndlessTimeoutReturnsAPresentKey) {
  Bootstrap& w = world();
  int peer = (w.rank() + 1) % w.size();
  EXPECT_EQ(text(w.get(peer, "before-barrier", milliseconds::max())),
            std::to_string(peer));
  w.barrier();
}

std::vector<uint8_t> pattern(int rank, size_t size) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<uint8_t>(rank * 31 + i);
  return v;
}

TEST(Bootstrap, AllgatherOfVariousSizes) {
  Bootstrap& w = world();
  // Each rank contributes a different length, up to the 1 MiB limit.
  for (size_t base : {size_t{0}, size_t{1}, size_t{7}, size_t{4096},
                      size_t{65539}, size_t{1} << 20}) {
    size_t mine = base >= size_t{1} << 20 ? base - w.rank() : base + w.rank();
    auto all = w.allgather(pattern(w.rank(), mine));
    ASSERT_EQ(static_cast<int>(all.size()), w.size());
    for (int r = 0; r < w.size(); ++r) {
      size_t theirs = base >= size_t{1} << 20 ? base - r : base + r;
      EXPECT_EQ(all[r], pattern(r, theirs)) << "rank " << r << " base " << base;
    }
  }
}

TEST(Bootstrap, ManySmallCollectivesStayInStep) {
  Bootstrap& w = world();
  for (int i = 0; i < 50; ++i) {
    auto all = w.allgather(bytes(std::to_string(i * 1000 + w.rank())));
    for (int r = 0; r < w.size(); ++r) {
      ASSERT_EQ(text(all[r]), std::to_string(i * 1000 + r));
    }
    if (i % 10 == 0) w.barrier();
  }
}

TEST(Bootstrap, GetTimeoutNamesKeyAndRank) {
  Bootstrap& w = world();
  int peer = (w.rank() + 1) % w.size();
  try {
    w.get(peer, "never-put", milliseconds(200));
    FAIL() << "get of a key nobody put returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_TIMEOUT);
    EXPECT_EQ(e.peer(), peer);
    std::string what = e.what();
    EXPECT_NE(what.find("'never-put'"), std::string::npos) << what;
    EXPECT_NE(what.find("rank " + std::to_string(peer)), std::string::npos)
        << what;
  }
  w.barrier();
}

TEST(Bootstrap, GetFromRankOutsideTheJobIsRejected) {
  Bootstrap& w = world();
  try {
    w.get(w.size(), "greeting", milliseconds(0));
    FAIL() << "get from rank " << w.size() << " returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_INVALID_ARGUMENT);
  }
}

TEST(Bootstrap, SecondInstanceKeepsItsOwnCollectives) {
  Bootstrap& w = world();
  std::unique_ptr<Bootstrap> other = Bootstrap::create(Config::load());
  EXPECT_EQ(other->backend(), w.backend());
  EXPECT_EQ(other->rank(), w.rank());
  auto a = w.allgather(bytes("first-" + std::to_string(w.rank())));
  auto b = other->allgather(bytes("second-" + std::to_string(w.rank())));
  for (int r = 0; r < w.size(); ++r) {
    EXPECT_EQ(text(a[r]), "first-" + std::to_string(r));
    EXPECT_EQ(text(b[r]), "second-" + std::to_string(r));
  }
  other->barrier();
  w.barrier();
}

TEST(Bootstrap, SingleBackendChosenByConfig) {
  TomlFile toml("[bootstrap]\nbackend = \"single\"\n");
  std::unique_ptr<Bootstrap> single = Bootstrap::create(toml.load());
  EXPECT_EQ(single->backend(), "single");
  EXPECT_EQ(single->rank(), 0);
  EXPECT_EQ(single->size(), 1);
  EXPECT_EQ(single->layout().host_of, std::vector<int>{0});
  single->put("k", bytes("v"));
  EXPECT_EQ(text(single->get(0, "k", milliseconds(0))), "v");
  EXPECT_EQ(single->allgather(bytes("x")),
            std::vector<std::vector<uint8_t>>{bytes("x")});
  single->barrier();
  try {
    single->get(0, "absent", milliseconds(10));
    FAIL() << "get of an absent key returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_TIMEOUT);
    EXPECT_NE(std::string(e.what()).find("'absent'"), std::string::npos);
  }
}

TEST(Bootstrap, UnknownBackendIsAConfigurationError) {
  TomlFile toml("[bootstrap]\nbackend = \"carrier-pigeon\"\n");
  try {
    Bootstrap::create(toml.load());
    FAIL() << "unknown backend accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_CONFIG);
    EXPECT_NE(std::string(e.what()).find("carrier-pigeon"), std::string::npos)
        << e.what();
  }
}

TEST(Bootstrap, RendezvousWithoutLauncherIsAConfigurationError) {
  if (world().backend() == "rendezvous")
    GTEST_SKIP() << "started by horovodrun";
  TomlFile toml("[bootstrap]\nbackend = \"rendezvous\"\n");
  try {
    Bootstrap::create(toml.load());
    FAIL() << "rendezvous without its environment accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_CONFIG);
    EXPECT_NE(std::string(e.what()).find("HOROVOD_RENDEZVOUS_ADDR"),
              std::string::npos)
        << e.what();
  }
}

// A rank holding the wrong secret is refused by the service (it drops the
// unauthenticated JOIN), and the job carries on.
TEST(Bootstrap, WrongSecretIsRefused) {
  if (world().backend() != "rendezvous") GTEST_SKIP() << "rendezvous only";
  std::string real = getenv("HOROVOD_SECRET_KEY");
  std::string wrong = real;
  wrong[0] = wrong[0] == '0' ? '1' : '0';
  setenv("HOROVOD_SECRET_KEY", wrong.c_str(), 1);
  try {
    Bootstrap::create(Config::load());
    ADD_FAILURE() << "joined with a wrong secret";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_PEER_FAILED) << e.what();
  }
  setenv("HOROVOD_SECRET_KEY", real.c_str(), 1);
  world().barrier();
}

// The launcher's layout variables and the ranks' host names must agree.
TEST(Bootstrap, LauncherLayoutMustAgree) {
  if (world().backend() != "rendezvous") GTEST_SKIP() << "rendezvous only";
  std::string real = getenv("HOROVOD_LOCAL_SIZE");
  setenv("HOROVOD_LOCAL_SIZE", std::to_string(world().size() + 1).c_str(), 1);
  try {
    Bootstrap::create(Config::load());
    ADD_FAILURE() << "a wrong HOROVOD_LOCAL_SIZE went unnoticed";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_MISMATCH) << e.what();
    EXPECT_NE(std::string(e.what()).find("HOROVOD_LOCAL_SIZE"),
              std::string::npos)
        << e.what();
  }
  setenv("HOROVOD_LOCAL_SIZE", real.c_str(), 1);
  world().barrier();
}

}  // namespace
}  // namespace hvd

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<hvd::Bootstrap> world;
  try {
    world = hvd::Bootstrap::create(hvd::Config::load());
  } catch (const std::exception& e) {
    fprintf(stderr, "bootstrap_test: cannot create the bootstrap: %s\n",
            e.what());
    return 1;
  }
  hvd::g_world = world.get();
  int failed = RUN_ALL_TESTS();
  // Leave together, so no rank's exit reads as a failure to the others.
  world->barrier();
  return failed;
}
