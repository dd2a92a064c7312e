// A training-shaped job that one rank spoils on purpose, for
// tools/fault-inject (horovodrun -np N, N >= 2):
//
//   fault_job CONFIG STEPS FAULT VICTIM STEP OP
//
// Each step is what a data-parallel optimizer does: the gradients of
// kLayers named layers (several sizes and dtypes, the same names every
// step) allreduced together, a metric allreduced inside process set 1 (the
// lower half of the ranks), the loss allgathered and the parameters
// broadcast from rank 0. Those are the step's ops, numbered 0, 1, ...
// (op_count()); after the last step every rank allreduces "job.done".
// Rank VICTIM, when it reaches op OP of step STEP (before
// enqueuing it), does FAULT:
//   kill      SIGKILL, from inside the data path of the op (the transport's
//             fault hook fires at its next data post)
//   stop      SIGSTOP to itself, never resumed
//   sever     its transports cut their data connections from inside
//   shape     submits the op with another shape
//   dtype     submits the op with another dtype
//   name      submits the op under another name
//   skip      leaves the op out
//   shutdown  calls hvd_shutdown and exits 0, its work unfinished
//   none      nothing (the job must then succeed)
// Every rank prints "fault-job: rank R of job J, pid P" at start. The victim
// prints "fault-job: injected FAULT ... at T" (T: CLOCK_REALTIME seconds)
// just before it acts; a rank whose op fails prints "fault-job: rank R
// detected at T: STATUS: MESSAGE" and exits 1; one that finishes prints
// "fault-job: rank R finished". The harness reads these lines.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <string>
#include <deque>
#include <vector>

#include "fault_arm.h"
#include "run_job.h"

using namespace mp;

namespace {

constexpr int kLayers = 10;

// The layer's element count and dtype: 64 B up to 1 MiB.
int64_t layer_elements(int layer) {
  static const int64_t sizes[] = {16,   1000, 4096,  250,    65536,
                                  2048, 333,  16384, 262144, 8};
  return sizes[layer];
}
hvd_dtype layer_dtype(int layer) {
  return layer % 3 == 2 ? HVD_FLOAT64 : HVD_FLOAT32;
}

int op_count() { return kLayers + 3; }
const int kMetricOp = kLayers, kLossOp = kLayers + 1, kParamsOp = kLayers + 2;

double wall_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

[[noreturn]] void fail_job(int rank, hvd_status s, std::string text) {
  // One line, for the harness.
  for (char& c : text)
    if (c == '\n') c = ' ';
  std::printf("fault-job: rank %d detected at %.3f: %s: %s\n", rank,
              wall_seconds(), hvd_status_string(s), text.c_str());
  std::fflush(stdout);
  hvd_shutdown();
  std::exit(1);
}

struct Fault {
  std::string kind = "none";
  int victim = -1, step = -1, op = -1;
};

class Trainer {
 public:
  Trainer(int rank, int size, const Fault& fault)
      : rank_(rank), size_(size), fault_(fault) {
    for (int l = 0; l < kLayers; ++l) {
      grads_.emplace_back(layer_dtype(l), std::vector<int64_t>{layer_elements(l)});
      names_.push_back("layer" + std::to_string(l) + ".grad");
    }
  }

  void step(int k) {
    handles_.clear();
    keep_.clear();
    for (int j = 0; j < op_count(); ++j) {
      if (!(j == kMetricOp && !in_metric_set())) submit(k, j);
    }
    for (hvd_handle* h : handles_) {
      hvd_status s = hvd_wait(h, -1);
      if (s != HVD_OK) fail_job(rank_, s, hvd_handle_message(h));
      hvd_release(h);
    }
  }

 private:
  bool in_metric_set() const { return rank_ < (size_ + 1) / 2; }
  bool is_victim() const { return rank_ == fault_.victim; }

  void submit(int k, int j) {
    const bool here = is_victim() && k == fault_.step && j == fault_.op;
    std::string name = j < kLayers      ? names_[j]
                       : j == kMetricOp ? "metric.partial"
                       : j == kLossOp   ? "loss"
                                        : "params";
    Buffer* input = nullptr;
    if (j < kLayers) input = &grads_[j];
    if (j == kMetricOp) input = &metric_;
    if (j == kLossOp) input = &loss_;
    if (j == kParamsOp) input = &params_;
    if (here) {
      inject();
      if (fault_.kind == "skip") return;
      if (fault_.kind == "name") name += ".renamed";
      if (fault_.kind == "shape" || fault_.kind == "dtype") {
        // Another shape in every collective: an allgather's first
        // dimension may differ, its others may not.
        std::vector<int64_t> shape = input->shape;
        shape.push_back(2);
        Buffer odd = fault_.kind == "shape"
                         ? Buffer(input->dtype, shape)
                         : Buffer(input->dtype == HVD_FLOAT32 ? HVD_INT32
                                                              : HVD_FLOAT32,
                                  input->shape);
        keep_.push_back(odd);
        input = &keep_.back();
      }
    }
    names_in_flight_.push_back(name);
    hvd_collective c = j == kLossOp     ? HVD_COLL_ALLGATHER
                       : j == kParamsOp ? HVD_COLL_BROADCAST
                                        : HVD_COLL_ALLREDUCE;
    hvd_op op = make_op(c, names_in_flight_.back(), &input->desc, 1);
    if (j == kMetricOp) op.process_set = 1;
    hvd_handle* h = nullptr;
    hvd_status s = hvd_enqueue(&op, &h);
    if (s != HVD_OK) fail_job(rank_, s, hvd_last_error());
    handles_.push_back(h);
  }

  void inject() {
    std::printf("fault-job: injected %s on rank %d at step %d op %d at %.3f\n",
                fault_.kind.c_str(), rank_, fault_.step, fault_.op,
                wall_seconds());
    std::fflush(stdout);
    using hvd_plugin::fault::Action;
    if (fault_.kind == "kill" || fault_.kind == "sever") {
      Action a = fault_.kind == "kill" ? Action::kKill : Action::kSever;
      if (hvd_test::arm_transport_fault(a, 1) == 0) {
        std::printf("fault-job: FAIL: no transport has the fault hook "
                    "(HOROVOD_FAULT_HOOKS off)\n");
        std::fflush(stdout);
        std::_Exit(3);
      }
    } else if (fault_.kind == "stop") {
      raise(SIGSTOP);
    } else if (fault_.kind == "shutdown") {
      hvd_shutdown();
      std::_Exit(0);
    }
  }

  int rank_, size_;
  Fault fault_;
  std::vector<Buffer> grads_;
  std::vector<std::string> names_;
  Buffer metric_{HVD_FLOAT32, {32}};
  Buffer loss_{HVD_FLOAT32, {1}};
  Buffer params_{HVD_FLOAT32, {4096}};
  std::vector<hvd_handle*> handles_;
  std::deque<Buffer> keep_;  // inputs made for the fault
  // Op names live until the process ends (hvd_op keeps the pointer).
  std::deque<std::string> names_in_flight_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    return usage(argv[0], "CONFIG STEPS FAULT VICTIM STEP OP");
  }
  // horovodrun sends SIGTERM to the others once one rank fails; each gets
  // the rest of the peer timeout to say what it saw.
  signal(SIGTERM, SIG_IGN);
  const int steps = std::atoi(argv[2]);
  Fault fault{argv[3], std::atoi(argv[4]), std::atoi(argv[5]),
              std::atoi(argv[6])};

  hvd_init_options options{};
  int32_t lower[64];
  const int32_t* sets[] = {lower};
  int32_t set_sizes[1] = {0};
  // The world size is known before init from horovodrun's environment.
  const char* size_env = std::getenv("HOROVOD_SIZE");
  const int world = size_env ? std::atoi(size_env) : 1;
  set_sizes[0] = (world + 1) / 2;
  for (int r = 0; r < set_sizes[0]; ++r) lower[r] = r;
  options.process_sets = sets;
  options.process_set_sizes = set_sizes;
  options.process_set_count = 1;
  if (!init_job(argv[1], options)) return 1;
  const char* job = std::getenv("HOROVOD_JOB_ID");
  std::printf("fault-job: rank %d of job %s, pid %d\n", R, job ? job : "?",
              static_cast<int>(getpid()));
  std::fflush(stdout);

  Trainer trainer(R, N, fault);
  for (int k = 0; k < steps; ++k) trainer.step(k);
  // As a script's last metric: no rank leaves while another still works
  // (a rank outside process set 1 would otherwise finish while its
  // members disagree, and its shutdown would be the others' error).
  Buffer done(HVD_INT32, {1});
  hvd_handle* h = nullptr;
  hvd_op last = make_op(HVD_COLL_ALLREDUCE, "job.done", &done.desc, 1);
  hvd_status s = hvd_enqueue(&last, &h);
  if (s != HVD_OK) fail_job(R, s, hvd_last_error());
  if ((s = hvd_wait(h, -1)) != HVD_OK) fail_job(R, s, hvd_handle_message(h));
  hvd_release(h);
  std::printf("fault-job: rank %d finished\n", R);
  std::fflush(stdout);
  hvd_shutdown();
  return 0;
}
