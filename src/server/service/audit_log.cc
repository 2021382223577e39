#include "audit_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "audit_format.h"
#include "snowid/clock.h"

namespace snowid::server {
namespace {

std::uint64_t random_incarnation() {
  std::uint64_t value = 0;
  if (::getrandom(&value, sizeof value, 0) == static_cast<ssize_t>(sizeof value)) return value;
  std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device();
}

}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path, bool fsync) {
  auto refuse = [&path](std::string_view reason) {
    return invalid_argument(fmt::format("audit_log {}: {}", path, reason));
  };
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    return refuse(fmt::format("cannot open for appending: {}", std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return refuse("not a regular file");
  }
  // A file that does not end with '\n' ends in a record cut short (a crash
  // of the machine mid-write): mark it before this process's first line.
  bool ends_torn = false;
  if (st.st_size > 0) {
    const int reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char last = '\n';
    if (reader >= 0) {
      if (::pread(reader, &last, 1, st.st_size - 1) != 1) last = '\n';
      ::close(reader);
    }
    ends_torn = last != '\n';
  }
  return std::unique_ptr<AuditLog>(new AuditLog(path, fd, fsync, ends_torn));
}

AuditLog::AuditLog(std::string path, int fd, bool fsync, bool ends_torn)
    : path_(std::move(path)),
      fd_(fd),
      fsync_(fsync),
      incarnation_(random_incarnation()),
      torn_(ends_torn) {}

AuditLog::~AuditLog() { ::close(fd_); }

Status AuditLog::write_header(const Layout& layout, std::uint64_t datacenter,
                              std::uint64_t worker) {
  const std::string line = audit::header(incarnation_, SystemClock::instance().now_fresh(),
                                         static_cast<long>(::getpid()), datacenter, worker, layout);
  return append(line, 0);
}

Status AuditLog::append(std::string_view records, std::uint64_t count) {
  std::unique_lock lock(mutex_);
  Status done = write_locked(records);
  if (done.ok() && fsync_) done = sync_locked(lock);
  if (!done.ok()) {
    write_errors_.fetch_add(1, std::memory_order_relaxed);
    last_failure_ = done.error().message;
    failing_.store(true, std::memory_order_release);
    return done;
  }
  failing_.store(false, std::memory_order_release);
  records_.fetch_add(count, std::memory_order_relaxed);
  return {};
}

Status AuditLog::health() const {
  if (!failing_.load(std::memory_order_acquire)) return {};
  std::lock_guard lock(mutex_);
  if (!sync_failure_.empty()) return Error{ErrorCode::kUnavailable, sync_failure_};
  return Error{ErrorCode::kUnavailable, last_failure_};
}

void AuditLog::probe() {
  if (!failing_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mutex_);
  if (!sync_failure_.empty()) return;  // for good: restart
  // Room for the next records? Reserve it past the end without growing the
  // file: this fails exactly as a write would (disk full, file size limit).
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return;
  constexpr off_t kProbeBytes = 64 * 1024;
  const int reserved = ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, st.st_size, kProbeBytes);
  if (reserved == 0 || errno == EOPNOTSUPP) failing_.store(false, std::memory_order_release);
}

Status AuditLog::write_locked(std::string_view bytes) {
  if (!sync_failure_.empty()) return Error{ErrorCode::kUnavailable, sync_failure_};
  std::string marked;  // allocated only after a torn write
  if (torn_) {
    marked = fmt::format("\n{}\n{}", audit::kTornMarker, bytes);
    bytes = marked;
  }
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      if (written > 0) torn_ = true;
      return Error{ErrorCode::kUnavailable,
                   fmt::format("audit log {}: cannot write: {}; the IDs were not sent", path_,
                               std::strerror(error))};
    }
    written += static_cast<std::size_t>(n);
  }
  torn_ = false;
  return {};
}

// Group commit: the first writer to find no fdatasync running starts one
// that covers every write made so far, outside the lock; the others wait
// for one that started after their write.
Status AuditLog::sync_locked(std::unique_lock<std::mutex>& lock) {
  const std::uint64_t mine = ++writes_;
  while (synced_ < mine) {
    if (!sync_failure_.empty()) return Error{ErrorCode::kUnavailable, sync_failure_};
    if (syncing_) {
      synced_cv_.wait(lock);
      continue;
    }
    syncing_ = true;
    const std::uint64_t covered = writes_;
    lock.unlock();
    const int rc = ::fdatasync(fd_);
    const int error = errno;
    lock.lock();
    syncing_ = false;
    fsyncs_.fetch_add(1, std::memory_order_relaxed);
    if (rc == 0) {
      synced_ = covered;
    } else {
      sync_failure_ = fmt::format(
          "audit log {}: fdatasync failed: {}; no ID is issued until snowidd is restarted", path_,
          std::strerror(error));
    }
    synced_cv_.notify_all();
  }
  return {};
}

AuditStats AuditLog::stats() const {
  return AuditStats{records_.load(std::memory_order_relaxed),
                    write_errors_.load(std::memory_order_relaxed),
                    fsyncs_.load(std::memory_order_relaxed)};
}

}  // namespace snowid::server
