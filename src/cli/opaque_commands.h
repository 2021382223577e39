// `snowid encode` and `snowid opaque ...`: IDs in short fixed-width text and
// opaque IDs (include/snowid/id_encoding.h, include/snowid/opaque_id.h).
//
//   snowid encode --encoding hex|base32|base58|base62|decimal ID...
//   snowid opaque encode ID... --key-file F [--encoding E]
//   snowid opaque decode OPAQUE... --key-file F [--encoding E]
//
// encode prints each decimal Snowflake ID in the encoding, one per line.
// opaque encode prints each ID's opaque ID (in E, default decimal); opaque
// decode reads opaque IDs in E and prints their Snowflake IDs in decimal.
// The key comes from a file only, never from a flag, and is never printed.
// `snowid decode --encoding E TEXT` reads the other way (main.cc). Exit
// codes: 0 printed; 2 bad input (an ID, the encoding, a missing, unreadable
// or short key file), one line on stderr and nothing on stdout.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "subcommand.h"

namespace snowid::cli {

class OpaqueCommands : public Subcommand {
 public:
  // Adds `encode` and `opaque encode|decode` to `app`.
  explicit OpaqueCommands(CLI::App& app);

  bool parsed() const override;
  // Runs the parsed subcommand; returns the exit code.
  int run() const override;

 private:
  CLI::App* encode_ = nullptr;
  CLI::App* opaque_encode_ = nullptr;
  CLI::App* opaque_decode_ = nullptr;
  std::vector<std::string> ids_;
  std::string encoding_ = "decimal";
  std::string key_file_;
};

}  // namespace snowid::cli
