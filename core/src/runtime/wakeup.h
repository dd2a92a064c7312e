// The background thread's wake-up: an eventfd written by whatever needs
// the thread (a new op, a failure, a peer calling it to a round) while it
// sleeps. A spinning thread looks at its flags instead, so a writer that
// finds it awake need not make the system call.
#pragma once

#include <atomic>

namespace hvd::runtime {

class Wakeup {
 public:
  Wakeup();  // throws hvd::Error when no eventfd can be made
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  int fd() const { return fd_; }
  void wake();
  void wake_if_sleeping() {
    if (sleeping_) wake();
  }
  // Reads the fd's count, if a wake may have written it.
  void drain();
  // Whether the thread sleeps where only the fd wakes it.
  void set_sleeping(bool sleeping) { sleeping_ = sleeping; }
  bool sleeping() const { return sleeping_; }
  // A peer called this rank to a round (ControlPlane::on_round_called): an
  // idle rank joins it as soon as it is called.
  void call_to_round() {
    round_called_ = true;
    wake_if_sleeping();
  }
  void note_round_call() { round_called_ = true; }
  bool take_round_call() { return round_called_.exchange(false); }

 private:
  int fd_ = -1;
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> written_{false};  // the fd may be readable
  std::atomic<bool> round_called_{false};
};

}  // namespace hvd::runtime
