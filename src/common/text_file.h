// Reading small whole files that configuration names (PEM certificates,
// keys, CA bundles), shared by the server, the CLI and the coordinators.
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "snowid/error.h"

namespace snowid {

// The whole content of `path`. kInvalidArgument, naming `what` and the path,
// if the file cannot be read or is empty.
inline Result<std::string> read_text_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty()) {
    return invalid_argument(
        fmt::format("cannot read the {} file '{}' (missing, unreadable or empty)", what, path));
  }
  return text.str();
}

}  // namespace snowid
