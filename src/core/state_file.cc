#include "state_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace snowid::internal {
namespace {

constexpr std::string_view kHeader = "# snowid state file: written by snowid, do not edit";

// FNV-1a, 64-bit: enough to notice a damaged or hand-edited file.
std::uint64_t checksum(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

Error state_error(const std::filesystem::path& path, std::string_view what) {
  return Error{ErrorCode::kStateFile, fmt::format("state file {}: {}", path.string(), what)};
}

Error errno_error(const std::filesystem::path& path, std::string_view action) {
  return state_error(path, fmt::format("{}: {}", action, std::strerror(errno)));
}

std::string body(const std::string& layout, std::chrono::milliseconds mark) {
  return fmt::format("{}\nversion=1\nlayout={}\nhigh_water_unix_ms={}\n", kHeader, layout,
                     mark.count());
}

// Writes all of `text` to `fd`.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

Result<std::chrono::milliseconds> parse(const std::filesystem::path& path,
                                        const std::string& content, const std::string& layout) {
  const auto sum_at = content.rfind("checksum=");
  if (sum_at == std::string::npos) return state_error(path, "damaged: no checksum line");
  const std::string covered = content.substr(0, sum_at);
  const std::string expected = fmt::format("checksum={:016x}\n", checksum(covered));
  if (content.substr(sum_at) != expected) {
    return state_error(path, "damaged: checksum mismatch; restore it from a backup or, knowing "
                             "that IDs may repeat, remove it");
  }
  std::istringstream lines(covered);
  std::string line, stored_layout;
  std::optional<long long> mark;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) return state_error(path, "damaged: line without '='");
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "version" && value != "1") {
      return state_error(path, fmt::format("unsupported version {}", value));
    } else if (key == "layout") {
      stored_layout = value;
    } else if (key == "high_water_unix_ms") {
      try {
        std::size_t used = 0;
        mark = std::stoll(value, &used);
        if (used != value.size() || *mark < 0) mark.reset();
      } catch (const std::exception&) {
        mark.reset();
      }
    }
  }
  if (!mark) return state_error(path, "damaged: no valid high_water_unix_ms");
  if (stored_layout != layout) {
    return state_error(path, fmt::format("written for layout '{}' but this generator uses '{}'; "
                                         "IDs of different layouts can collide",
                                         stored_layout, layout));
  }
  return std::chrono::milliseconds{*mark};
}

}  // namespace

StateFile::StateFile(std::filesystem::path path, std::string layout_description, int lock_fd)
    : path_(std::move(path)), layout_description_(std::move(layout_description)),
      lock_fd_(lock_fd) {}

StateFile::StateFile(StateFile&& other) noexcept
    : path_(std::move(other.path_)), layout_description_(std::move(other.layout_description_)),
      lock_fd_(std::exchange(other.lock_fd_, -1)), mark_(other.mark_) {}

StateFile::~StateFile() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // closing releases the flock
}

Result<StateFile> StateFile::open(const std::filesystem::path& path,
                                  const std::string& layout_description) {
  const std::filesystem::path lock_path = path.string() + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(lock_path, "cannot open lock file");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[32] = {};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      std::string pid = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "?";
      while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
      return Error{ErrorCode::kStateLocked,
                   fmt::format("state file {} is in use by another process (pid {})",
                               path.string(), pid)};
    }
    errno = err;
    return errno_error(lock_path, "cannot lock");
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  // The pid only feeds the message another process shows; the lock holds without it.
  if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, pid.data(), pid.size(), 0);
  StateFile file(path, layout_description, fd);

  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) || ec) {
      return errno_error(path, "cannot read");
    }
    return file;  // fresh start
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return errno_error(path, "cannot read");
  auto mark = parse(path, content.str(), layout_description);
  if (!mark.ok()) return mark.error();
  file.mark_ = *mark;
  return file;
}

Status StateFile::store(std::chrono::milliseconds high_water) {
  const std::string covered = body(layout_description_, high_water);
  const std::string content =
      fmt::format("{}checksum={:016x}\n", covered, checksum(covered));
  const std::filesystem::path tmp = path_.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(tmp, "cannot create");
  const bool written = write_all(fd, content) && ::fsync(fd) == 0;
  const int write_errno = errno;
  ::close(fd);
  if (!written) {
    errno = write_errno;
    return errno_error(tmp, "cannot write");
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) return errno_error(path_, "cannot replace");
  const auto dir = path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return errno_error(dir, "cannot open directory to sync it");
  const bool synced = ::fsync(dir_fd) == 0;
  ::close(dir_fd);
  if (!synced) return errno_error(dir, "cannot sync directory");
  mark_ = high_water;
  return {};
}

}  // namespace snowid::internal
