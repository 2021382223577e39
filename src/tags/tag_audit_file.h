// The tag audit log (option tag_audit_log): one JSON line per tag change
// made through this node (TagBook's audit lines), appended and flushed to
// the disk before the change is answered.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "snowid/error.h"

namespace snowid::tags {

// Opens (creates, mode 0640) `path` for appending. kInvalidArgument naming
// the path if it cannot be opened. The writer is safe from any thread; a
// line that cannot be written is logged as an error.
Result<std::function<void(std::string_view line)>> open_tag_audit_file(const std::string& path);

}  // namespace snowid::tags
