// snowid: generate, decode and compose IDs and show layouts from the shell.
//
// Exit codes: 0 success; 1 the work failed (clock behind, state file locked);
// 2 bad input (one line on stderr, nothing printed on stdout).
//
// Every subcommand is a Subcommand (subcommand.h) listed in kSubcommands; the
// gen, decode, compose, layout and bench subcommands are defined here, the
// others in their own files.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "check_command.h"
#include "cluster_commands.h"
#include "exit_codes.h"
#include "grpc_bench.h"
#include "id_json.h"
#include "layout_args.h"
#include "layout_drawing.h"
#include "node_id_command.h"
#include "opaque_commands.h"
#include "progress_bar.h"
#include "segment_commands.h"
#include "snowid/decode.h"
#include "snowid/generator.h"
#include "snowid/id_encoding.h"
#include "snowid/id_formats.h"
#include "snowid/layout.h"
#include "snowid_version.h"
#include "state_commands.h"
#include "tag_commands.h"
#include "subcommand.h"
#include "thrift_bench.h"
#include "time_text.h"

namespace snowid::cli {
namespace {

using std::chrono::milliseconds;

// Thrown inside a subcommand to leave with one line on stderr.
struct Exit {
  int code;
  std::string message;
};

[[noreturn]] void usage_error(const Error& error) { throw Exit{kExitUsage, error.message}; }
[[noreturn]] void failure(const Error& error) { throw Exit{kExitFailure, error.message}; }

template <typename T>
T or_usage_error(Result<T> result) {
  if (!result.ok()) usage_error(result.error());
  return std::move(result).value();
}

std::uint64_t parse_number(const std::string& text, std::uint64_t max, std::string_view option) {
  return or_usage_error(parse_unsigned(text, max, option));
}

milliseconds wall_now() { return SystemClock::instance().now_fresh(); }

// Buffered writer to stdout: formatting and writing must not be the bottleneck
// of `snowid gen`.
class Output {
 public:
  // Flushes what is left; a write error here is reported by the explicit flush() calls.
  ~Output() {
    try {
      flush();
    } catch (const Exit&) {
    }
  }
  void id(Id value) {
    if (buffer_.size() - used_ < 32) flush();
    auto [end, ec] = std::to_chars(buffer_.data() + used_, buffer_.data() + buffer_.size(), value);
    (void)ec;
    *end = '\n';
    used_ = static_cast<std::size_t>(end - buffer_.data()) + 1;
  }
  void line(std::string_view text) {
    if (buffer_.size() - used_ < text.size() + 1) flush();
    std::memcpy(buffer_.data() + used_, text.data(), text.size());
    used_ += text.size();
    buffer_[used_++] = '\n';
  }
  void flush() {
    std::size_t done = 0;
    while (done < used_) {
      const ssize_t n = ::write(STDOUT_FILENO, buffer_.data() + done, used_ - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        used_ = 0;  // drop the rest: the destructor must not try again
        throw Exit{kExitFailure, fmt::format("cannot write output: {}", std::strerror(errno))};
      }
      done += static_cast<std::size_t>(n);
    }
    used_ = 0;
  }

 private:
  std::vector<char> buffer_ = std::vector<char>(1 << 20);
  std::size_t used_ = 0;
};

struct GenArgs {
  std::string count = "1", worker_id = "0", datacenter_id = "0", state_file, clock_policy,
              max_wait_ms, max_drift_ms, sequence_start = "zero", node_id_from, kind = "snowflake";
  bool node_id_given = false;  // --worker-id or --datacenter-id on the command line
  ProgressFlags progress;
};

// Formatted IDs (UUIDv7, ULID, ObjectId) from `generator`, `count` lines.
// On a refusal, returns the error; the lines printed so far stay printed.
// ObjectIds after an earlier run on the same state file wait (up to 3 s)
// for the second after its mark, which the library refuses rather than
// blocking a server's thread (id_formats.h).
Status print_formatted(Generator& generator, IdKind kind, std::uint64_t count, Output& out,
                       ProgressBar& progress) {
  auto source = FormattedIdSource::create(generator);
  if (!source.ok()) return source.error();
  std::vector<FormattedId> ids(std::min<std::uint64_t>(count, 1u << 16));
  std::uint64_t done = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{3};
  while (done < count) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(count - done, ids.size()));
    const std::span<FormattedId> block = std::span(ids).first(want);
    Status issued = (*source)->next(kind, block);
    if (!issued.ok() && kind == IdKind::kObjectId && done == 0 &&
        issued.error().code == ErrorCode::kClockBehind &&
        std::chrono::steady_clock::now() < give_up) {
      SystemClock::instance().sleep_for(std::chrono::milliseconds{10});
      continue;
    }
    if (!issued.ok()) return issued;
    for (const FormattedId& id : block) out.line(to_text(id));
    done += want;
    progress.advance_to(done);
  }
  return {};
}

// --node-id-from mac-pid: the node id derived from the machine, into `options`.
void apply_node_id_from(const GenArgs& args, GeneratorOptions& options) {
  if (args.node_id_from != "mac-pid") {
    usage_error(invalid_argument(
        fmt::format("--node-id-from '{}': the only source is mac-pid", args.node_id_from)));
  }
  if (args.node_id_given) {
    usage_error(invalid_argument(
        "--node-id-from mac-pid derives the node id: do not also give --worker-id or "
        "--datacenter-id"));
  }
  auto derived = mac_pid_node_id_for_gen(options.layout);
  if (!derived.ok()) failure(derived.error());
  options.datacenter_id = derived->datacenter_id;
  options.worker_id = derived->worker_id;
}

// The generator's options from `snowid gen`'s flags, checked in the order
// they are documented; a bad one leaves with a usage error.
GeneratorOptions generator_options(const GenArgs& args, const LayoutArgs& layout_args,
                                   std::uint64_t& count) {
  GeneratorOptions options;
  options.layout = or_usage_error(layout_args.resolve_layout());
  count = parse_number(args.count, std::numeric_limits<std::uint64_t>::max(), "-n");
  options.datacenter_id = parse_number(
      args.datacenter_id, std::numeric_limits<std::uint32_t>::max(), "--datacenter-id");
  options.worker_id =
      parse_number(args.worker_id, std::numeric_limits<std::uint32_t>::max(), "--worker-id");
  if (!args.node_id_from.empty()) apply_node_id_from(args, options);
  options.state_file = args.state_file;
  if (!args.clock_policy.empty()) {
    options.clock_policy = or_usage_error(parse_clock_policy(args.clock_policy));
  }
  if (!args.max_wait_ms.empty()) {
    options.max_wait = milliseconds{
        static_cast<long long>(parse_number(args.max_wait_ms, 3'600'000, "--max-wait-ms"))};
  }
  if (!args.max_drift_ms.empty()) {
    options.max_drift = milliseconds{
        static_cast<long long>(parse_number(args.max_drift_ms, 3'600'000, "--max-drift-ms"))};
  }
  options.sequence_start = or_usage_error(parse_sequence_start(args.sequence_start));
  return options;
}

// The generator of `options`, after checking that its layout is usable now;
// prints the layout's warning, if any, on stderr.
std::unique_ptr<Generator> open_generator(const GeneratorOptions& options) {
  const LayoutFacts facts = layout_facts(options.layout, wall_now());
  if (Status usable = usable_at(options.layout, wall_now()); !usable.ok()) {
    usage_error(usable.error());
  }
  auto created = Generator::create(options);
  if (!created.ok()) {
    if (created.error().code == ErrorCode::kInvalidArgument) usage_error(created.error());
    failure(created.error());
  }
  if (facts.warning) std::fprintf(stderr, "snowid: warning: %s\n", facts.warning->c_str());
  return std::move(*created);
}

// Leaves `snowid gen` on `error` after flushing what was printed and saving
// the generator's mark (best effort: the error is what matters). A usage
// error if `error.code` is one of `usage_codes`, else a failure.
[[noreturn]] void stop_generating(std::unique_ptr<Generator>& generator, Output& out, Error error,
                                  std::initializer_list<ErrorCode> usage_codes) {
  out.flush();
  (void)generator->checkpoint();
  generator.reset();  // exit() skips destructors: end the generator's run first (its rule)
  if (std::find(usage_codes.begin(), usage_codes.end(), error.code) != usage_codes.end()) {
    usage_error(error);
  }
  failure(error);
}

// `count` Snowflake IDs, one per line.
void print_snowflakes(std::unique_ptr<Generator>& generator, std::uint64_t count, Output& out,
                      ProgressBar& progress) {
  std::uint64_t done = 0;
  while (done < count) {
    const auto want = static_cast<std::uint32_t>(std::min<std::uint64_t>(count - done, 1u << 16));
    auto block = generator->next_block(want);
    if (!block.ok()) stop_generating(generator, out, block.error(), {ErrorCode::kClockBeforeEpoch});
    for (std::uint32_t i = 0; i < block->count; ++i) out.id(block->at(i));
    done += block->count;
    progress.advance_to(done);
  }
}

int run_gen(const GenArgs& args, const LayoutArgs& layout_args) {
  std::optional<IdKind> kind;  // nullopt: Snowflake IDs
  if (args.kind != "snowflake") kind = or_usage_error(parse_id_kind(args.kind));
  std::uint64_t count = 0;
  const GeneratorOptions options = generator_options(args, layout_args, count);
  std::unique_ptr<Generator> generator = open_generator(options);

  Output out;
  ProgressBar::Options bar;
  bar.total = count;
  bar.mode = args.progress.mode();
  bar.check_every = 1 << 16;  // IDs between two looks at the clock
  ProgressBar progress(bar);
  if (kind) {
    Status printed = print_formatted(*generator, *kind, count, out, progress);
    if (!printed.ok()) {
      stop_generating(generator, out, printed.error(),
                      {ErrorCode::kInvalidArgument, ErrorCode::kClockBeforeEpoch});
    }
  } else {
    print_snowflakes(generator, count, out, progress);
  }
  out.flush();
  progress.finish();
  Status saved = generator->checkpoint();
  // Without a state file, destroying the generator waits until the clock has
  // passed its IDs, so that the next run cannot repeat them (generator.h).
  generator.reset();
  if (!saved.ok()) failure(saved.error());
  return 0;
}

// One line of `snowid decode` for a UUID, ULID or ObjectId: the text, then
// its fields as name=value.
std::string formatted_id_line(const DecodedId& decoded) {
  const nlohmann::json fields = decoded_json(decoded);
  const std::string kind = fields["kind"].get<std::string>();
  std::string line = fields[kind].get<std::string>() + " kind=" + kind;
  for (const auto& [name, value] : fields.items()) {
    if (name == "kind" || name == kind) continue;
    line += " " + name + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return line;
}

// `encoding`: empty to tell each ID by its shape, else the name of the
// encoding (id_encoding.h) every ID is written in, a Snowflake ID.
int run_decode(const std::vector<std::string>& ids, bool json, const std::string& encoding,
               const LayoutArgs& layout_args) {
  const Layout layout = or_usage_error(layout_args.resolve_layout());
  std::optional<IdEncoding> given;
  if (!encoding.empty()) given = or_usage_error(parse_id_encoding(encoding));
  std::vector<DecodedId> decoded;
  for (const std::string& text : ids) {
    const std::string shaped =
        given ? encode_id(or_usage_error(decode_id(text, *given)), IdEncoding::kDecimal) : text;
    decoded.push_back(or_usage_error(decode_text(shaped, layout)));
  }
  for (const DecodedId& any : decoded) {
    if (json) {
      std::printf("%s\n", decoded_json(any).dump().c_str());
    } else if (!std::holds_alternative<DecodedSnowflake>(any)) {
      std::printf("%s\n", formatted_id_line(any).c_str());
    } else {
      const auto& [id, fields] = std::get<DecodedSnowflake>(any);
      std::printf("%lld time=%s timestamp_ms=%lld datacenter=%llu worker=%llu sequence=%llu\n",
                  static_cast<long long>(id), format_time(fields.timestamp).c_str(),
                  static_cast<long long>(fields.timestamp.count()),
                  static_cast<unsigned long long>(fields.datacenter),
                  static_cast<unsigned long long>(fields.worker),
                  static_cast<unsigned long long>(fields.sequence));
    }
  }
  return 0;
}

struct ComposeArgs {
  std::string timestamp, datacenter = "0", worker = "0", sequence = "0";
};

int run_compose(const ComposeArgs& args, const LayoutArgs& layout_args) {
  const Layout layout = or_usage_error(layout_args.resolve_layout());
  IdFields fields;
  fields.timestamp = or_usage_error(parse_time(args.timestamp));
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  fields.datacenter = parse_number(args.datacenter, kMax, "--datacenter");
  fields.worker = parse_number(args.worker, kMax, "--worker");
  fields.sequence = parse_number(args.sequence, kMax, "--sequence");
  std::printf("%lld\n", static_cast<long long>(or_usage_error(compose(layout, fields))));
  return 0;
}

int run_layout(bool json, const LayoutArgs& layout_args) {
  const Layout layout = or_usage_error(layout_args.resolve_layout());
  const milliseconds now = wall_now();
  if (json) {
    std::printf("%s\n", layout_json(layout, now).dump(2).c_str());
    return 0;
  }
  const LayoutFacts facts = layout_facts(layout, now);
  std::string text = draw_layout(layout);
  text += fmt::format("\nlayout             {}\n", describe(layout));
  text += fmt::format("total bits         {}\n", facts.total_bits);
  text += fmt::format("max datacenter id  {}\n", facts.max_datacenter_id);
  text += fmt::format("max worker id      {}\n", facts.max_worker_id);
  text += fmt::format("IDs per unit       {} per node\n", facts.ids_per_unit);
  text += fmt::format("IDs per second     {:.0f} per node\n", facts.ids_per_second);
  text += fmt::format("largest ID         {}\n", facts.max_id);
  text += fmt::format("timestamp overflow {}\n", format_time(facts.overflow_at));
  if (facts.warning) text += fmt::format("warning: {}\n", *facts.warning);
  std::fputs(text.c_str(), stdout);
  return 0;
}

// Runs a `snowid bench` load of `options` for `seconds` and prints its report;
// exit 1 if a call failed or an ID came twice.
template <typename Options>
int run_bench(Options options, double seconds, Result<LoadReport> (*run_load)(const Options&)) {
  if (!(seconds > 0 && seconds <= 3600)) {
    usage_error(invalid_argument("--duration must be in (0, 3600] seconds"));
  }
  options.duration = std::chrono::milliseconds{static_cast<std::int64_t>(seconds * 1000)};
  auto report = run_load(options);
  if (!report.ok()) {
    if (report.error().code == ErrorCode::kInvalidArgument) usage_error(report.error());
    failure(report.error());
  }
  std::fputs(format_report(options, *report).c_str(), stdout);
  return report->failures.empty() && report->duplicates == 0 ? 0 : kExitFailure;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// Leaves with a failure if stdout could not take what was printed.
int flushed(int code) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    throw Exit{kExitFailure, fmt::format("cannot write output: {}", std::strerror(errno))};
  }
  return code;
}

// A subcommand that is one CLI11 subcommand and takes the layout options.
class LayoutSubcommand : public Subcommand {
 public:
  bool parsed() const override { return command_->parsed(); }

 protected:
  LayoutSubcommand(CLI::App& app, LayoutArgs& layout_args, const std::string& name,
                   const std::string& description)
      : layout_args_(layout_args), command_(app.add_subcommand(name, description)) {}

  const LayoutArgs& layout_args_;
  CLI::App* const command_;
};

// `snowid gen`: new IDs, one per line.
class GenCommand : public LayoutSubcommand {
 public:
  GenCommand(CLI::App& app, LayoutArgs& layout_args)
      : LayoutSubcommand(app, layout_args, "gen", "Print new IDs, one per line") {
    command_->add_option("-n,--count", args_.count, "How many IDs")->default_str("1");
    command_->add_option("--worker-id", args_.worker_id, "Worker id of this node")
        ->default_str("0");
    command_->add_option("--datacenter-id", args_.datacenter_id, "Datacenter id of this node")
        ->default_str("0");
    command_->add_option("--state-file", args_.state_file,
                         "File holding the high-water mark, so a restart never repeats IDs");
    command_
        ->add_option("--clock-policy", args_.clock_policy,
                     "On a clock step back: reject, wait or monotonic")
        ->default_str("monotonic");
    command_->add_option("--max-wait-ms", args_.max_wait_ms, "wait policy: longest wait")
        ->default_str("5");
    command_
        ->add_option("--max-drift-ms", args_.max_drift_ms,
                     "monotonic policy: largest lead over the clock")
        ->default_str("1000");
    command_
        ->add_option("--sequence-start", args_.sequence_start,
                     "Sequence start of each time unit: zero or random")
        ->default_str("zero");
    command_->add_option("--node-id-from", args_.node_id_from,
                         "mac-pid: derive the node id as MyBatis-Plus and Hutool do (can collide; "
                         "one machine's embedded use only)");
    command_
        ->add_option("--kind", args_.kind,
                     "snowflake, or uuid7, ulid, objectid: made from Snowflake IDs, with their "
                     "clock policy and state file")
        ->default_str("snowflake");
    args_.progress.add_to(*command_);
    layout_args.add_to(*command_);
  }
  int run() const override {
    GenArgs args = args_;
    args.node_id_given = command_->count("--worker-id") + command_->count("--datacenter-id") > 0;
    return run_gen(args, layout_args_);
  }

 private:
  GenArgs args_;
};

// `snowid decode`: the fields of IDs.
class DecodeCommand : public LayoutSubcommand {
 public:
  DecodeCommand(CLI::App& app, LayoutArgs& layout_args)
      : LayoutSubcommand(app, layout_args, "decode",
                         "Print the fields of IDs: Snowflake (decimal), UUID, ULID or ObjectId") {
    command_->add_option("ids", ids_, "IDs to decode, each recognised by its shape")->required();
    command_->add_flag("--json", json_, "One JSON object per line");
    command_->add_option("--encoding", encoding_,
                         "Every ID is a Snowflake ID in this text: hex, base32, base58, base62 or "
                         "decimal (default: each recognised by its shape)");
    layout_args.add_to(*command_);
  }
  int run() const override { return flushed(run_decode(ids_, json_, encoding_, layout_args_)); }

 private:
  std::vector<std::string> ids_;
  bool json_ = false;
  std::string encoding_;
};

// `snowid compose`: the ID made of given fields.
class ComposeCommand : public LayoutSubcommand {
 public:
  ComposeCommand(CLI::App& app, LayoutArgs& layout_args)
      : LayoutSubcommand(app, layout_args, "compose", "Print the ID made of the given fields") {
    command_
        ->add_option("--timestamp-ms", args_.timestamp, "Unix ms (or ISO 8601) of the ID's time")
        ->required();
    command_->add_option("--datacenter", args_.datacenter, "Datacenter id")->default_str("0");
    command_->add_option("--worker", args_.worker, "Worker id")->default_str("0");
    command_->add_option("--sequence", args_.sequence, "Sequence number")->default_str("0");
    layout_args.add_to(*command_);
  }
  int run() const override { return flushed(run_compose(args_, layout_args_)); }

 private:
  ComposeArgs args_;
};

// `snowid layout`: a layout's bit fields and derived facts.
class LayoutCommand : public LayoutSubcommand {
 public:
  LayoutCommand(CLI::App& app, LayoutArgs& layout_args)
      : LayoutSubcommand(app, layout_args, "layout",
                         "Show a layout's bit fields and derived facts") {
    command_->add_flag("--json", json_, "Print JSON");
    layout_args.add_to(*command_);
  }
  int run() const override { return flushed(run_layout(json_, layout_args_)); }

 private:
  bool json_ = false;
};

// `snowid bench grpc|thrift`: load on a running snowidd.
class BenchCommand : public Subcommand {
 public:
  explicit BenchCommand(CLI::App& app) {
    bench_ = app.add_subcommand("bench", "Measure a running snowidd");
    bench_->require_subcommand(1);
    add_grpc();
    add_thrift();
  }
  bool parsed() const override { return bench_->parsed(); }
  int run() const override {
    if (grpc_->parsed()) return run_bench(grpc_options_, grpc_seconds_, run_grpc_bench);
    return run_bench(thrift_options_, thrift_seconds_, run_thrift_bench);
  }

 private:
  void add_grpc() {
    grpc_ = bench_->add_subcommand(
        "grpc", "Keep calls in flight against the gRPC API; report calls/s, IDs/s, latency");
    grpc_->add_option("--target", grpc_options_.target, "snowidd's gRPC ADDR:PORT")
        ->default_str("127.0.0.1:9090");
    grpc_->add_option("--duration", grpc_seconds_, "Seconds of load")->default_str("5");
    grpc_->add_option("--concurrency", grpc_options_.concurrency, "Calls in flight")
        ->default_str("64");
    grpc_->add_option("--channels", grpc_options_.channels, "HTTP/2 connections")->default_str("2");
    grpc_
        ->add_option("--batch", grpc_options_.batch,
                     "IDs per call: 0 for unary NextId, N for NextIds(N)")
        ->default_str("0");
    grpc_->add_flag("--stream", grpc_options_.stream,
                    "StreamIds streams instead of NextIds calls (with --batch N)");
    grpc_->add_option("--token", grpc_options_.bearer_token, "Bearer token");
    grpc_->add_option("--tls-ca", grpc_options_.tls_ca_file,
                      "PEM file of the CA that signed snowidd's certificate (enables TLS)");
    grpc_->add_flag("--verify", grpc_options_.verify,
                    "Keep every ID and report duplicates (memory: 8 bytes per ID)");
  }
  void add_thrift() {
    thrift_ = bench_->add_subcommand(
        "thrift",
        "Call get_id of the Thrift listener on several connections; report calls/s, latency");
    thrift_->add_option("--host", thrift_options_.host, "snowidd's Thrift address")
        ->default_str("127.0.0.1");
    thrift_->add_option("--port", thrift_options_.port, "snowidd's Thrift port")
        ->default_str("7609");
    thrift_->add_option("--duration", thrift_seconds_, "Seconds of load")->default_str("5");
    thrift_
        ->add_option("--connections", thrift_options_.connections,
                     "Connections, each with one call in flight")
        ->default_str("16");
    thrift_->add_flag("--verify", thrift_options_.verify,
                      "Keep every ID and report duplicates (memory: 8 bytes per ID)");
  }

  CLI::App* bench_ = nullptr;
  CLI::App* grpc_ = nullptr;
  CLI::App* thrift_ = nullptr;
  GrpcBenchOptions grpc_options_;
  double grpc_seconds_ = 5;
  ThriftBenchOptions thrift_options_;
  double thrift_seconds_ = 5;
};

// Makes `Command`, adding its options to `app`.
template <typename Command>
std::unique_ptr<Subcommand> make(CLI::App& app, LayoutArgs& layout_args) {
  if constexpr (std::is_constructible_v<Command, CLI::App&, LayoutArgs&>) {
    return std::make_unique<Command>(app, layout_args);
  } else {
    return std::make_unique<Command>(app);
  }
}

// Every subcommand of snowid, in the order `snowid --help` lists them. The
// layout options are one LayoutArgs shared by the subcommands that take
// them: only one subcommand is parsed per run.
using MakeSubcommand = std::unique_ptr<Subcommand> (*)(CLI::App&, LayoutArgs&);
constexpr MakeSubcommand kSubcommands[] = {
    make<GenCommand>,   make<DecodeCommand>,  make<ComposeCommand>, make<LayoutCommand>,
    make<BenchCommand>, make<ClusterCommands>, make<NodeIdCommand>,  make<SegmentCommands>,
    make<CheckCommand>, make<StateCommands>,  make<OpaqueCommands>, make<TagCommands>,
};

int run(int argc, char** argv) {
  CLI::App app{"snowid: unique, time-ordered 64-bit IDs (Snowflake layouts)", "snowid"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  app.set_version_flag("--version", fmt::format("snowid {}", kVersion),
                       "Print the version (snowid <version>) and exit");
  LayoutArgs layout_args;
  std::vector<std::unique_ptr<Subcommand>> commands;
  for (MakeSubcommand make_command : kSubcommands) {
    commands.push_back(make_command(app, layout_args));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "snowid: %s\n", one_line(e.what()).c_str());
    return kExitUsage;
  }

  try {
    for (const auto& command : commands) {
      if (command->parsed()) return command->run();
    }
  } catch (const Exit& exit) {
    std::fflush(stdout);
    std::fprintf(stderr, "snowid: %s\n", one_line(exit.message).c_str());
    return exit.code;
  }
  return kExitUsage;
}

}  // namespace
}  // namespace snowid::cli

int main(int argc, char** argv) { return snowid::cli::run(argc, argv); }
