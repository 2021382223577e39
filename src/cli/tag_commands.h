// `snowid tag ...` and `snowid business`: tag administration and business
// IDs on a running snowidd, over its HTTP API (node_http.h: --node,
// --cacert, --token-file or SNOWID_TOKEN, --timeout):
//
//   snowid tag create TAG [--start N] [--step N] [--template T] [--zone Z] [--description D]
//   snowid tag list
//   snowid tag show TAG
//   snowid tag change TAG [--step N] [--template T] [--zone Z]
//   snowid tag retire TAG
//   snowid business TAG [--count N]
//
// The tag commands need an admin token; business needs a token that opens
// the tag. A tag prints as aligned "field  value" lines (list: a table, one
// tag a row), business IDs one a line; --json prints the node's JSON
// instead. Exit codes as for every snowid command: 0 done; 1 the node
// refused (its message on one line) or did not answer; 2 bad input (one line
// on stderr).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "node_http.h"
#include "subcommand.h"

namespace snowid::cli {

class TagCommands : public Subcommand {
 public:
  // Adds `tag` (and its subcommands) and `business` to `app`.
  explicit TagCommands(CLI::App& app);

  bool parsed() const override;
  int run() const override;

 private:
  int run_tag_call() const;
  int run_business() const;

  CLI::App* tag_ = nullptr;
  CLI::App* create_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* change_ = nullptr;
  CLI::App* retire_ = nullptr;
  CLI::App* business_ = nullptr;
  NodeOptions node_;
  bool json_ = false;
  std::string tag_name_;
  std::int64_t start_ = 1;
  std::int64_t step_ = 1000;
  std::string template_;
  std::string zone_;
  std::string description_;
  std::uint32_t count_ = 1;
};

}  // namespace snowid::cli
