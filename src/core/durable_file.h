// Small files that must survive a crash whole: the state file's high-water
// mark (state_file.h) and segment mode's range memory
// (src/segment/range_memory.h) are written the one way below.
//
// Form. The text ends in one line "checksum=<16 hex digits>\n", the FNV-1a
// hash of every byte before it. A reader that finds no such line, another
// hash, or bytes after it, holds a damaged file, never a valid one.
//
// Replacement. replace_file_atomically() writes a temporary file beside the
// target, fsyncs it, renames it over the target and fsyncs the directory, so
// a crash leaves either the old or the new content, never a torn one.
//
// Thread-safety: free functions; a caller serialises writes of one file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "snowid/error.h"

namespace snowid::internal {

// FNV-1a, 64-bit: enough to notice a damaged or hand-edited file.
std::uint64_t fnv1a_checksum(std::string_view text);

// `covered` followed by its checksum line.
std::string with_checksum(std::string_view covered);

// The text a checksum line covers, if `content` ends in exactly the one
// checksum line that matches it; otherwise nullopt-like: ok() false with a
// short reason ("no checksum line", "checksum mismatch").
Result<std::string_view> checksummed_body(std::string_view content);

// Replaces the file `shown.filename()` in the directory open at
// `directory_fd` by one holding `content`: "<name>.tmp" (whatever was there
// is removed, and the file is created anew, never opened through a link) is
// written and fsynced, `before_rename` is called (a failure there leaves the
// target alone), the temporary file is renamed over the target and the
// directory fsynced. Once the rename took place, `renamed_fd` receives the
// new file's descriptor (the caller closes it), even if the directory's
// fsync then fails. `shown` names the file in errors, which are kStateFile.
Status replace_file_atomically(int directory_fd, const std::filesystem::path& shown,
                               std::string_view content,
                               const std::function<Status()>& before_rename, int& renamed_fd);

// Writes all of `text` to `fd`, retrying after EINTR; false on an error (errno
// set).
bool write_all(int fd, std::string_view text);

}  // namespace snowid::internal
