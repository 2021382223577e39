// Reading small whole files that configuration names (PEM certificates,
// keys, CA bundles), shared by the server, the CLI and the coordinators.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "snowid/error.h"

namespace snowid {

// The most a file named by configuration may hold: a CA bundle of every
// public root is about 200 KiB.
inline constexpr std::uintmax_t kMaxTextFileBytes = 4 << 20;

// The whole content of `path`. kInvalidArgument, naming `what` and the path,
// if the file cannot be read or is empty, or is not a regular file of at most
// kMaxTextFileBytes: a directory, a FIFO (whose open would wait for a
// writer) or a device such as /dev/zero (endless) is refused before it is
// opened.
inline Result<std::string> read_text_file(const std::string& path, std::string_view what) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!error && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return invalid_argument(fmt::format("the {} file '{}' is not a regular file", what, path));
  }
  if (!error && std::filesystem::exists(status) &&
      std::filesystem::file_size(path, error) > kMaxTextFileBytes && !error) {
    return invalid_argument(fmt::format("the {} file '{}' is larger than {} MiB", what, path,
                                        kMaxTextFileBytes >> 20));
  }
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
