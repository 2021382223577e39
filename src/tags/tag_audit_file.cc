#include "tag_audit_file.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

#include <fmt/format.h>

namespace snowid::tags {
namespace {

class AuditFile {
 public:
  AuditFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~AuditFile() { ::close(fd_); }
  AuditFile(const AuditFile&) = delete;
  AuditFile& operator=(const AuditFile&) = delete;

  void append(std::string_view line) {
    std::string record(line);
    record += '\n';
    std::lock_guard lock(mutex_);
    std::size_t written = 0;
    while (written < record.size()) {
      const ssize_t n = ::write(fd_, record.data() + written, record.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        spdlog::error("tag audit log {}: cannot write a change ({}): {}", path_,
                      std::strerror(errno), line);
        return;
      }
      written += static_cast<std::size_t>(n);
    }
    if (::fdatasync(fd_) != 0) {
      spdlog::error("tag audit log {}: cannot flush a change to the disk: {}", path_,
                    std::strerror(errno));
    }
  }

 private:
  std::string path_;
  int fd_;
  std::mutex mutex_;
};

}  // namespace

Result<std::function<void(std::string_view line)>> open_tag_audit_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    return invalid_argument(
        fmt::format("tag_audit_log {}: cannot open it: {}", path, std::strerror(errno)));
  }
  auto file = std::make_shared<AuditFile>(path, fd);
  return std::function<void(std::string_view)>(
      [file](std::string_view line) { file->append(line); });
}

}  // namespace snowid::tags
