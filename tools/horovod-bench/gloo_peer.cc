#include "gloo_peer.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/error.h"
#include "options.h"

namespace hvd_bench {
namespace {

using hvd::Error;

std::string store_directory() {
  if (const char* dir = std::getenv("HOROVOD_BENCH_GLOO_STORE")) {
    if (*dir) return dir;
  }
  const char* job = std::getenv("HOROVOD_JOB_ID");
  if (!job || !*job) {
    throw Error(HVD_ERR_CONFIG,
                "--peer gloo: no directory for Gloo's file store (run under "
                "horovodrun, or set HOROVOD_BENCH_GLOO_STORE to a directory "
                "every rank sees)");
  }
  return std::string("/tmp/hvd-") + job + "/gloo-store";
}

void make_directory(const std::string& path) {
  // The parent may be the launcher's /tmp/hvd-<job id>/, or not yet exist.
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    mkdir(path.substr(0, slash).c_str(), 0700);
  }
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    throw Error(HVD_ERR_SYSTEM, "--peer gloo: cannot create " + path + ": " +
                                    std::strerror(errno));
  }
}

// Gloo's device starts its event-loop thread, which inherits the creating
// thread's affinity: under runtime.bind_to_core that is one core, shared
// with the thread that waits on the loop, which would time Gloo unfairly
// (16 B took 4 ms, 64 MiB ran 15% slower). While alive, lets the calling
// thread run on every online CPU.
class AnyCpu {
 public:
  AnyCpu() {
    saved_ok_ = sched_getaffinity(0, sizeof(saved_), &saved_) == 0;
    cpu_set_t any;
    CPU_ZERO(&any);
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < cpus && c < CPU_SETSIZE; ++c) CPU_SET(c, &any);
    sched_setaffinity(0, sizeof(any), &any);
  }
  ~AnyCpu() {
    if (saved_ok_) sched_setaffinity(0, sizeof(saved_), &saved_);
  }
  AnyCpu(const AnyCpu&) = delete;
  AnyCpu& operator=(const AnyCpu&) = delete;

 private:
  cpu_set_t saved_;
  bool saved_ok_ = false;
};

template <typename T>
void sum(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

class GlooPeer : public Layer {
 public:
  GlooPeer(int rank, int size) : rank_(rank), size_(size) {
    const std::string dir = store_directory();
    make_directory(dir);
    gloo::transport::tcp::attr attr;
    if (const char* iface = std::getenv("HOROVOD_GLOO_IFACE")) {
      attr.iface = iface;
    } else {
      attr.hostname = "127.0.0.1";
    }
    try {
      const AnyCpu unbound_loop_thread;
      device_ = gloo::transport::tcp::CreateDevice(attr);
      gloo::rendezvous::FileStore files(dir);
      gloo::rendezvous::PrefixStore store("bench", files);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context->setTimeout(std::chrono::seconds(60));
      context->connectFullMesh(store, device_);
      context_ = context;
    } catch (const std::exception& e) {
      throw Error(HVD_ERR_SYSTEM, std::string("--peer gloo: rendezvous in ") +
                                      dir + " failed on rank " +
                                      std::to_string(rank) + ": " + e.what());
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return "Gloo (gloo::allreduce, ring, over " + device_->str() + ")";
  }

  void prepare(const Shape& shape, Workload& workload) override {
    if (shape.collective != HVD_COLL_ALLREDUCE) {
      throw Error(HVD_ERR_UNSUPPORTED,
                  "--peer gloo: only allreduce is compared with Gloo");
    }
    shape_ = shape;
    send_ = workload.send();
    recv_ = workload.recv();
    switch (shape.dtype) {
      case HVD_FLOAT32:
      case HVD_FLOAT64:
      case HVD_INT32:
      case HVD_INT64:
        break;
      default:
        throw Error(HVD_ERR_UNSUPPORTED, std::string("--peer gloo: no ") +
                                             dtype_label(shape.dtype) +
                                             " sum in this comparison");
    }
  }

  void run_once() override {
    gloo::AllreduceOptions opts(context_);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(tag_++);
    const size_t n = shape_.count;
    switch (shape_.dtype) {
      case HVD_FLOAT64:
        set<double>(opts, n);
        break;
      case HVD_INT32:
        set<int32_t>(opts, n);
        break;
      case HVD_INT64:
        set<int64_t>(opts, n);
        break;
      default:
        set<float>(opts, n);
        break;
    }
    try {
      gloo::allreduce(opts);
    } catch (const std::exception& e) {
      throw Error(HVD_ERR_SYSTEM, "gloo::allreduce of " +
                                      std::to_string(shape_.bytes()) +
                                      " bytes on rank " +
                                      std::to_string(rank_) + ": " + e.what());
    }
  }

  std::string algorithm() const override { return "gloo"; }

  void barrier() override {
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag_++);
    gloo::barrier(opts);
  }

  std::vector<double> max_over_ranks(const std::vector<double>& mine) override {
    std::vector<double> out = mine;
    if (out.empty()) return out;
    gloo::AllreduceOptions opts(context_);
    opts.setTag(tag_++);
    opts.setOutput(out.data(), out.size());
    opts.setReduceFunction([](void* c, const void* a, const void* b, size_t n) {
      double* o = static_cast<double*>(c);
      const double* x = static_cast<const double*>(a);
      const double* y = static_cast<const double*>(b);
      for (size_t i = 0; i < n; ++i) o[i] = x[i] > y[i] ? x[i] : y[i];
    });
    gloo::allreduce(opts);
    return out;
  }

 private:
  template <typename T>
  void set(gloo::AllreduceOptions& opts, size_t n) {
    // Gloo reduces in place in its output; a separate input is copied in.
    T* out = static_cast<T*>(recv_);
    if (send_ != recv_) {
      opts.setInput(const_cast<T*>(static_cast<const T*>(send_)), n);
    }
    opts.setOutput(out, n);
    opts.setReduceFunction(&sum<T>);
  }

  int rank_, size_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  Shape shape_;
  const void* send_ = nullptr;
  void* recv_ = nullptr;
  uint32_t tag_ = 0;
};

}  // namespace

std::unique_ptr<Layer> make_gloo_peer(hvd_collective collective, int rank,
                                      int size) {
  if (collective != HVD_COLL_ALLREDUCE) {
    throw Error(HVD_ERR_UNSUPPORTED,
                std::string("--peer gloo: only allreduce is compared with "
                            "Gloo, not ") +
                    collective_name(collective));
  }
  return std::make_unique<GlooPeer>(rank, size);
}

}  // namespace hvd_bench
