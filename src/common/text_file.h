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

// The secret option `name` in effect: `value` as given, or else the content
// of `file` (option `name`_file) without its final newline, so that the
// secret shows neither in `ps` nor in the configuration. kInvalidArgument,
// naming the option, if both are set or if the file is missing, unreadable
// or empty.
inline Result<std::string> secret_or_file(const std::string& value, const std::string& file,
                                          std::string_view name) {
  if (file.empty()) return value;
  if (!value.empty()) {
    return invalid_argument(
        fmt::format("{0} and {0}_file are both set: give the secret once", name));
  }
  auto text = read_text_file(file, fmt::format("{}_file", name));
  if (!text.ok()) return text.error();
  std::string secret = std::move(*text);
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (!secret.empty() && secret.back() == '\r') secret.pop_back();
  if (secret.empty()) {
    return invalid_argument(fmt::format("{}_file '{}' holds an empty secret", name, file));
  }
  return secret;
}

}  // namespace snowid
