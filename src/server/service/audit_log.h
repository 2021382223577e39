// snowidd's audit log (option audit_log): a record of every block of IDs
// handed out, written before the response that carries them is sent, so that
// `snowid check --audit` can prove afterwards that every ID a client holds
// was issued by a known process (an incarnation) of a known node. The line
// format is src/check/audit_format.h.
//
// Guarantee. IdService::issue() appends a request's records (one per
// generator block) with one write(2) on a file opened with O_APPEND, and the
// response is built only after that write returned in full. If it fails or
// is cut short the request is answered 503 / UNAVAILABLE and its IDs are
// never sent (they stay consumed, so they are never issued again). Once
// write(2) returns the record is in the kernel: it survives a crash of
// snowidd (kill -9 included) but not a crash of the machine. With
// audit_fsync the request also waits for fdatasync(2) to cover its record
// (group commit: one fdatasync serves every request that wrote meanwhile),
// and the log survives a machine crash too; after a failed fdatasync the
// kernel may have dropped the data, so every later request fails until
// snowidd is restarted.
//
// Writes are serialised by a mutex (write(2) on one file is serialised by
// the kernel anyway); the buffer is the caller's, so nothing is allocated.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid::server {

struct AuditStats {
  std::uint64_t records = 0;       // records acknowledged (written, and synced with fsync)
  std::uint64_t write_errors = 0;  // appends refused: their requests got 503 / UNAVAILABLE
  std::uint64_t fsyncs = 0;        // fdatasync calls (audit_fsync only)
};

class AuditLog {
 public:
  // Opens `path` for appending, creating it (mode 0640) if missing, and
  // draws this process's incarnation (a random 64-bit number).
  // kInvalidArgument, naming the path and the reason, if it cannot be opened
  // for writing or is not a regular file.
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path, bool fsync);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t incarnation() const { return incarnation_; }
  bool fsync() const { return fsync_; }

  // Appends this start's header line (incarnation, start time, pid, node, layout).
  Status write_header(const Layout& layout, std::uint64_t datacenter, std::uint64_t worker);

  // Appends `records` (`count` whole record lines) with one write(2) and,
  // with fsync, waits until fdatasync covered them. Ok only then; otherwise
  // kUnavailable, and the records must be treated as never written.
  Status append(std::string_view records, std::uint64_t count);

  // Ok unless the last append failed (the next one is then expected to fail
  // too: disk full, file size limit, a failed fdatasync), with its reason.
  // For readiness: a node whose audit log refuses every request is not ready.
  Status health() const;
  // After a failed append: checks whether records fit again (room reserved
  // past the end of the file) and, if so, makes health() ok again. From a
  // timer; cheap while healthy.
  void probe();

  AuditStats stats() const;

 private:
  AuditLog(std::string path, int fd, bool fsync, bool ends_torn);
  Status write_locked(std::string_view bytes);
  Status sync_locked(std::unique_lock<std::mutex>& lock);

  const std::string path_;
  const int fd_;
  const bool fsync_;
  const std::uint64_t incarnation_;

  mutable std::mutex mutex_;
  std::atomic<bool> failing_{false};  // the last append failed
  std::string last_failure_;          // its reason; under mutex_
  bool torn_;  // the file ends in a record cut short: start the next write with a torn marker
  // Group commit (fsync only): writes counted, writes covered by a successful fdatasync.
  std::uint64_t writes_ = 0;
  std::uint64_t synced_ = 0;
  bool syncing_ = false;
  std::string sync_failure_;  // set for good by a failed fdatasync
  std::condition_variable synced_cv_;

  std::atomic<std::uint64_t> records_{0};
  std::atomic<std::uint64_t> write_errors_{0};
  std::atomic<std::uint64_t> fsyncs_{0};
};

}  // namespace snowid::server
