#include "durable_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace snowid::internal {
namespace {

constexpr std::string_view kChecksumKey = "checksum=";

Error file_error(const std::filesystem::path& path, std::string_view action) {
  return Error{ErrorCode::kStateFile,
               fmt::format("{}: {}: {}", path.string(), action, std::strerror(errno))};
}

}  // namespace

std::uint64_t fnv1a_checksum(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string with_checksum(std::string_view covered) {
  return fmt::format("{}{}{:016x}\n", covered, kChecksumKey, fnv1a_checksum(covered));
}

Result<std::string_view> checksummed_body(std::string_view content) {
  // The checksum line is the last line: 9 + 16 + 1 bytes, after a '\n' or
  // at the very start.
  constexpr std::size_t kLineBytes = kChecksumKey.size() + 16 + 1;
  const std::size_t at = content.size() >= kLineBytes ? content.size() - kLineBytes : 0;
  if (content.size() < kLineBytes || content.substr(at, kChecksumKey.size()) != kChecksumKey ||
      (at > 0 && content[at - 1] != '\n')) {
    return Error{ErrorCode::kStateFile, "it does not end in a checksum line"};
  }
  const std::string_view covered = content.substr(0, at);
  if (content.substr(at) != fmt::format("{}{:016x}\n", kChecksumKey, fnv1a_checksum(covered))) {
    return Error{ErrorCode::kStateFile, "checksum mismatch"};
  }
  return covered;
}

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

Status replace_file_atomically(int directory_fd, const std::filesystem::path& shown,
                               std::string_view content,
                               const std::function<Status()>& before_rename, int& renamed_fd) {
  const std::string name = shown.filename().string();
  const std::string tmp_name = name + ".tmp";
  const std::filesystem::path tmp = shown.string() + ".tmp";
  // The temporary name is the writer's alone: whatever is there (a file a
  // crash left, a planted link) is removed, and the file is created anew,
  // never opened through a link, which would write into the file the link
  // names and then rename the link over the target.
  if (::unlinkat(directory_fd, tmp_name.c_str(), 0) != 0 && errno != ENOENT) {
    return file_error(tmp, "cannot remove the old temporary file");
  }
  const int fd = ::openat(directory_fd, tmp_name.c_str(),
                          O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return file_error(tmp, "cannot create");
  const bool written = write_all(fd, content) && ::fsync(fd) == 0;
  const int write_errno = errno;
  if (!written) {
    ::close(fd);
    errno = write_errno;
    return file_error(tmp, "cannot write");
  }
  if (Status ready = before_rename ? before_rename() : Status{}; !ready.ok()) {
    ::close(fd);
    return ready;
  }
  if (::renameat(directory_fd, tmp_name.c_str(), directory_fd, name.c_str()) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return file_error(shown, "cannot replace");
  }
  renamed_fd = fd;
  if (::fsync(directory_fd) != 0) return file_error(shown.parent_path(), "cannot sync directory");
  return {};
}

}  // namespace snowid::internal
