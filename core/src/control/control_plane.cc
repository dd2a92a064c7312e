#include "control/control_plane.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "common/log.h"
#include "control/impl.h"

namespace hvd {

namespace {

std::string this_host(const Bootstrap& bootstrap,
                      const ControlPlaneOptions& options) {
  if (!options.hostname.empty()) return options.hostname;
  if (!bootstrap.layout().hostname.empty()) return bootstrap.layout().hostname;
  if (const char* env = std::getenv("HOROVOD_HOSTNAME"); env && *env)
    return env;
  char name[256] = "";
  gethostname(name, sizeof name - 1);
  return name;
}

ControlPlaneOptions checked(ControlPlaneOptions options) {
  if (options.tree_arity < 1 || options.tree_arity > 64)
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "control plane: tree arity " +
                    std::to_string(options.tree_arity) + " is outside 1..64");
  if (options.heartbeat_interval <= std::chrono::milliseconds(0))
    options.heartbeat_interval = std::chrono::milliseconds(1000);
  auto timeout = options.peer_timeout;
  if (timeout > std::chrono::milliseconds(0) &&
      options.heartbeat_interval * 2 > timeout) {
    auto interval = std::max(timeout / 3, std::chrono::milliseconds(1));
    HVD_LOG(WARNING) << "control plane: heartbeat interval "
                     << control::describe_duration(options.heartbeat_interval)
                     << " is too long for a peer timeout of "
                     << control::describe_duration(timeout) << "; using "
                     << control::describe_duration(interval);
    options.heartbeat_interval = interval;
  }
  return options;
}

int make_eventfd() {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0)
    throw Error(HVD_ERR_SYSTEM,
                std::string("control plane: eventfd: ") + std::strerror(errno));
  return fd;
}

}  // namespace

ControlPlane::Impl::Impl(Bootstrap& bootstrap,
                         const ControlPlaneOptions& options)
    : bootstrap_(bootstrap),
      options_(checked(options)),
      rank_(bootstrap.rank()),
      size_(bootstrap.size()),
      host_(this_host(bootstrap, options)) {
  monitor_wake_fd_ = make_eventfd();
  try {
    caller_wake_fd_ = make_eventfd();
  } catch (...) {
    close(monitor_wake_fd_);
    throw;
  }
}

ControlPlane::Impl::~Impl() {
  stop_.store(true);
  wake(monitor_wake_fd_);
  if (monitor_thread_.joinable()) monitor_thread_.join();
  if (!abandoned_) leave();
  links_.clear();
  close(monitor_wake_fd_);
  close(caller_wake_fd_);
}

ControlPlane::ControlPlane(Bootstrap& bootstrap,
                           const ControlPlaneOptions& options)
    : impl_(std::make_unique<Impl>(bootstrap, options)) {
  try {
    impl_->start();
  } catch (const std::exception& e) {
    impl_->abandon(e.what());
    throw;
  }
}

ControlPlane::~ControlPlane() = default;

int ControlPlane::rank() const { return impl_->rank_; }
int ControlPlane::size() const { return impl_->size_; }

std::optional<PeerFailure> ControlPlane::failure() const {
  std::lock_guard<std::mutex> lock(impl_->failure_mutex_);
  return impl_->failure_;
}

void ControlPlane::on_failure(
    std::function<void(const PeerFailure&)> callback) {
  {
    std::lock_guard<std::mutex> lock(impl_->failure_mutex_);
    impl_->callback_ = std::move(callback);
    impl_->callback_done_ = false;
  }
  impl_->wake(impl_->monitor_wake_fd_);
}

void ControlPlane::report_failure(int rank, const std::string& reason) {
  if (rank < 0 || rank >= impl_->size_)
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "control plane: report_failure: rank " + std::to_string(rank) +
                    " is outside the world of " + std::to_string(impl_->size_));
  impl_->note_failure(rank, "", reason);
}

}  // namespace hvd
