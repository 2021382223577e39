// snowid: generate, decode and compose IDs and show layouts from the shell.
//
// Exit codes: 0 success; 1 the work failed (clock behind, state file locked);
// 2 bad input (one line on stderr, nothing printed on stdout).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "check_command.h"
#include "cluster_commands.h"
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
#include "thrift_bench.h"
#include "time_text.h"

namespace snowid::cli {
namespace {

using std::chrono::milliseconds;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

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

int run_gen(const GenArgs& args, const LayoutArgs& layout_args) {
  std::optional<IdKind> kind;  // nullopt: Snowflake IDs
  if (args.kind != "snowflake") kind = or_usage_error(parse_id_kind(args.kind));
  GeneratorOptions options;
  options.layout = or_usage_error(layout_args.resolve_layout());
  const std::uint64_t count =
      parse_number(args.count, std::numeric_limits<std::uint64_t>::max(), "-n");
  options.datacenter_id = parse_number(args.datacenter_id, std::numeric_limits<std::uint32_t>::max(),
                                       "--datacenter-id");
  options.worker_id =
      parse_number(args.worker_id, std::numeric_limits<std::uint32_t>::max(), "--worker-id");
  if (!args.node_id_from.empty()) {
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

  const LayoutFacts facts = layout_facts(options.layout, wall_now());
  if (Status usable = usable_at(options.layout, wall_now()); !usable.ok()) {
    usage_error(usable.error());
  }
  auto created = Generator::create(options);
  if (!created.ok()) {
    if (created.error().code == ErrorCode::kInvalidArgument) usage_error(created.error());
    failure(created.error());
  }
  Generator& generator = **created;
  if (facts.warning) std::fprintf(stderr, "snowid: warning: %s\n", facts.warning->c_str());

  Output out;
  ProgressBar::Options bar;
  bar.total = count;
  bar.mode = args.progress.mode();
  bar.check_every = 1 << 16;  // IDs between two looks at the clock
  ProgressBar progress(bar);
  std::uint64_t done = kind ? count : 0;
  if (kind) {
    Status printed = print_formatted(generator, *kind, count, out, progress);
    if (!printed.ok()) {
      out.flush();
      (void)generator.checkpoint();
      created->reset();
      if (printed.error().code == ErrorCode::kInvalidArgument ||
          printed.error().code == ErrorCode::kClockBeforeEpoch) {
        usage_error(printed.error());
      }
      failure(printed.error());
    }
  }
  while (done < count) {
    const auto want = static_cast<std::uint32_t>(std::min<std::uint64_t>(count - done, 1u << 16));
    auto block = generator.next_block(want);
    if (!block.ok()) {
      out.flush();
      (void)generator.checkpoint();  // best effort: the failure below is what matters
      const Error error = block.error();
      created->reset();  // exit() skips destructors: end the generator's run first (its rule)
      if (error.code == ErrorCode::kClockBeforeEpoch) usage_error(error);
      failure(error);
    }
    for (std::uint32_t i = 0; i < block->count; ++i) out.id(block->at(i));
    done += block->count;
    progress.advance_to(done);
  }
  out.flush();
  progress.finish();
  Status saved = generator.checkpoint();
  // Without a state file, destroying the generator waits until the clock has
  // passed its IDs, so that the next run cannot repeat them (generator.h).
  created->reset();
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

int run(int argc, char** argv) {
  CLI::App app{"snowid: unique, time-ordered 64-bit IDs (Snowflake layouts)", "snowid"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  app.set_version_flag("--version", fmt::format("snowid {}", kVersion),
                       "Print the version (snowid <version>) and exit");

  LayoutArgs layout_args;
  GenArgs gen_args;
  auto* gen = app.add_subcommand("gen", "Print new IDs, one per line");
  gen->add_option("-n,--count", gen_args.count, "How many IDs")->default_str("1");
  gen->add_option("--worker-id", gen_args.worker_id, "Worker id of this node")->default_str("0");
  gen->add_option("--datacenter-id", gen_args.datacenter_id, "Datacenter id of this node")
      ->default_str("0");
  gen->add_option("--state-file", gen_args.state_file,
                  "File holding the high-water mark, so a restart never repeats IDs");
  gen->add_option("--clock-policy", gen_args.clock_policy,
                  "On a clock step back: reject, wait or monotonic")
      ->default_str("monotonic");
  gen->add_option("--max-wait-ms", gen_args.max_wait_ms, "wait policy: longest wait")
      ->default_str("5");
  gen->add_option("--max-drift-ms", gen_args.max_drift_ms,
                  "monotonic policy: largest lead over the clock")
      ->default_str("1000");
  gen->add_option("--sequence-start", gen_args.sequence_start,
                  "Sequence start of each time unit: zero or random")
      ->default_str("zero");
  gen->add_option("--node-id-from", gen_args.node_id_from,
                  "mac-pid: derive the node id as MyBatis-Plus and Hutool do (can collide; "
                  "one machine's embedded use only)");
  gen->add_option("--kind", gen_args.kind,
                  "snowflake, or uuid7, ulid, objectid: made from Snowflake IDs, with their "
                  "clock policy and state file")
      ->default_str("snowflake");
  gen_args.progress.add_to(*gen);
  layout_args.add_to(*gen);

  std::vector<std::string> ids;
  bool decode_json = false;
  std::string decode_encoding;
  auto* dec = app.add_subcommand(
      "decode", "Print the fields of IDs: Snowflake (decimal), UUID, ULID or ObjectId");
  dec->add_option("ids", ids, "IDs to decode, each recognised by its shape")->required();
  dec->add_flag("--json", decode_json, "One JSON object per line");
  dec->add_option("--encoding", decode_encoding,
                  "Every ID is a Snowflake ID in this text: hex, base32, base58, base62 or "
                  "decimal (default: each recognised by its shape)");
  layout_args.add_to(*dec);

  ComposeArgs compose_args;
  auto* comp = app.add_subcommand("compose", "Print the ID made of the given fields");
  comp->add_option("--timestamp-ms", compose_args.timestamp,
                   "Unix ms (or ISO 8601) of the ID's time")
      ->required();
  comp->add_option("--datacenter", compose_args.datacenter, "Datacenter id")->default_str("0");
  comp->add_option("--worker", compose_args.worker, "Worker id")->default_str("0");
  comp->add_option("--sequence", compose_args.sequence, "Sequence number")->default_str("0");
  layout_args.add_to(*comp);

  bool layout_json_flag = false;
  auto* lay = app.add_subcommand("layout", "Show a layout's bit fields and derived facts");
  lay->add_flag("--json", layout_json_flag, "Print JSON");
  layout_args.add_to(*lay);

  GrpcBenchOptions bench_options;
  double bench_seconds = 5;
  auto* bench = app.add_subcommand("bench", "Measure a running snowidd");
  bench->require_subcommand(1);
  auto* bench_grpc = bench->add_subcommand(
      "grpc", "Keep calls in flight against the gRPC API; report calls/s, IDs/s, latency");
  bench_grpc->add_option("--target", bench_options.target, "snowidd's gRPC ADDR:PORT")
      ->default_str("127.0.0.1:9090");
  bench_grpc->add_option("--duration", bench_seconds, "Seconds of load")->default_str("5");
  bench_grpc->add_option("--concurrency", bench_options.concurrency, "Calls in flight")
      ->default_str("64");
  bench_grpc->add_option("--channels", bench_options.channels, "HTTP/2 connections")
      ->default_str("2");
  bench_grpc->add_option("--batch", bench_options.batch,
                         "IDs per call: 0 for unary NextId, N for NextIds(N)")
      ->default_str("0");
  bench_grpc->add_flag("--stream", bench_options.stream,
                       "StreamIds streams instead of NextIds calls (with --batch N)");
  bench_grpc->add_option("--token", bench_options.bearer_token, "Bearer token");
  bench_grpc->add_option("--tls-ca", bench_options.tls_ca_file,
                         "PEM file of the CA that signed snowidd's certificate (enables TLS)");
  bench_grpc->add_flag("--verify", bench_options.verify,
                       "Keep every ID and report duplicates (memory: 8 bytes per ID)");
  ThriftBenchOptions thrift_options;
  double thrift_seconds = 5;
  auto* bench_thrift = bench->add_subcommand(
      "thrift",
      "Call get_id of the Thrift listener on several connections; report calls/s, latency");
  bench_thrift->add_option("--host", thrift_options.host, "snowidd's Thrift address")
      ->default_str("127.0.0.1");
  bench_thrift->add_option("--port", thrift_options.port, "snowidd's Thrift port")
      ->default_str("7609");
  bench_thrift->add_option("--duration", thrift_seconds, "Seconds of load")->default_str("5");
  bench_thrift
      ->add_option("--connections", thrift_options.connections,
                   "Connections, each with one call in flight")
      ->default_str("16");
  bench_thrift->add_flag("--verify", thrift_options.verify,
                         "Keep every ID and report duplicates (memory: 8 bytes per ID)");
  ClusterCommands cluster(app);
  NodeIdCommand node_id(app, layout_args);
  SegmentCommands segment(app);
  CheckCommand check(app, layout_args);
  StateCommands state(app, layout_args);
  OpaqueCommands opaque(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "snowid: %s\n", one_line(e.what()).c_str());
    return kExitUsage;
  }

  try {
    if (gen->parsed()) {
      gen_args.node_id_given = gen->count("--worker-id") + gen->count("--datacenter-id") > 0;
      return run_gen(gen_args, layout_args);
    }
    if (node_id.parsed()) return node_id.run();
    if (bench_grpc->parsed()) return run_bench(bench_options, bench_seconds, run_grpc_bench);
    if (bench_thrift->parsed()) return run_bench(thrift_options, thrift_seconds, run_thrift_bench);
    if (auto code = cluster.run()) return *code;
    if (auto code = state.run()) return *code;
    if (segment.parsed()) return segment.run();
    if (check.parsed()) return check.run();
    if (opaque.parsed()) return opaque.run();
    int code = kExitUsage;
    if (dec->parsed()) code = run_decode(ids, decode_json, decode_encoding, layout_args);
    if (comp->parsed()) code = run_compose(compose_args, layout_args);
    if (lay->parsed()) code = run_layout(layout_json_flag, layout_args);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      throw Exit{kExitFailure, fmt::format("cannot write output: {}", std::strerror(errno))};
    }
    return code;
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
