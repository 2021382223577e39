#include "check_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "audit_tail.h"
#include "exit_codes.h"
#include "high_water_mark.h"
#include "id_checker.h"
#include "progress_bar.h"
#include "snowid/clock.h"
#include "snowid/decode.h"
#include "time_text.h"

namespace snowid::cli {
namespace {

using std::chrono::milliseconds;

// `snowid check`'s own meaning of exit code 1 (exit_codes.h: kExitFailure).
constexpr int kExitFindings = kExitFailure;
constexpr std::size_t kReadBytes = 4 << 20;
constexpr std::size_t kSourcesShown = 20;
constexpr std::size_t kSourcesInJson = 1000;

constexpr const char* kFooter =
    R"(Input: one ID per line (decimal). A line "NAME<TAB>ID" gives the ID to the
source NAME; other IDs belong to the source named after their file ("-" for
standard input, also read when no FILE is given). A named source is the same
source in every file, read in the order given. Lines starting with '#' and
blank lines are skipped; "\r\n" line ends are fine.

Findings (any one fails the check, exit 1):
  duplicates        an ID that appears more than once, in any source
  order violations  an ID not greater than the one before it in its source
  future IDs        an ID whose time unit starts more than --max-drift after --now
  missing           with --audit: an ID that no record of the audit logs covers
                    (acknowledged but not audited)
  overlaps          with --audit: two audit records covering one ID (issued twice)
  state behind      with --state-file: the audit logs hold an ID whose time unit
                    starts after the state file's mark (or there is no mark): the
                    state directory was restored from an older copy, and a node
                    started on it alone would issue those IDs again

--audit FILE reads a snowidd audit log (option audit_log): lines
"<incarnation> <datacenter>/<worker> <first> <last>" and '#' comments; the
layout options must match the one the server ran with. A torn last record (a
write cut short) is dropped: it was never acknowledged.

--state-file FILE compares a node's state file (state_dir/generator.state)
with the audit logs given (of that node: every record counts). Without FILE
arguments it reads no IDs.

Memory: 8 bytes per ID (16 while sorting IDs that were not in increasing
order) and 16 bytes per audit record.

Exit codes: 0 nothing found; 1 a finding, or an input that cannot be read;
2 bad input (a line that is not an ID, a missing file, a bad option).)";

// "250ms", "1s", "5m", "1h": a duration with its unit.
Result<milliseconds> parse_duration(const std::string& text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [unit, ec] = std::from_chars(text.data(), end, value);
  const std::string_view suffix(unit, static_cast<std::size_t>(end - unit));
  std::uint64_t scale = 0;
  if (suffix == "ms") scale = 1;
  if (suffix == "s") scale = 1000;
  if (suffix == "m") scale = 60'000;
  if (suffix == "h") scale = 3'600'000;
  constexpr std::uint64_t kMaxMs = 366ULL * 24 * 3'600'000;
  if (ec != std::errc{} || unit == text.data() || scale == 0 || value > kMaxMs / scale) {
    return invalid_argument(fmt::format(
        "--max-drift '{}' is not a duration with a unit such as 250ms, 1s, 5m or 1h (at most "
        "366 days)",
        text.substr(0, 40)));
  }
  return milliseconds{static_cast<long long>(value * scale)};
}

// Reads all of `fd` into the checker, counting the bytes on `progress`. An
// error from the checker is bad input; a read error is returned as kUnavailable.
Status read_into(check::IdChecker& checker, int fd, const std::string& name, char* buffer,
                 ProgressBar& progress) {
  for (;;) {
    const ssize_t n = ::read(fd, buffer, kReadBytes);
    if (n == 0) return checker.end_input();
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{ErrorCode::kUnavailable,
                   fmt::format("cannot read {}: {}", name, std::strerror(errno))};
    }
    Status s = checker.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    if (!s.ok()) return s;
    progress.add(static_cast<std::uint64_t>(n));
  }
}

// Opens `path` ("-": standard input); kInvalidArgument if it cannot be opened.
Result<int> open_input(const std::string& path, check::IdChecker& checker) {
  if (path == "-") return STDIN_FILENO;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return invalid_argument(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    constexpr std::size_t kBytesPerId = 20;  // 19 digits and '\n'
    checker.reserve(static_cast<std::size_t>(st.st_size) / kBytesPerId);
  }
  return fd;
}

// The bytes in `paths` ("-": standard input), or 0 if one of them is not a
// regular file (a pipe, a terminal) or cannot be looked at: size unknown.
std::uint64_t total_bytes(const std::vector<std::string>& paths) {
  std::uint64_t total = 0;
  for (const std::string& path : paths) {
    struct stat st {};
    const int got = path == "-" ? ::fstat(STDIN_FILENO, &st) : ::stat(path.c_str(), &st);
    if (got != 0 || !S_ISREG(st.st_mode)) return 0;
    total += static_cast<std::uint64_t>(st.st_size);
  }
  return total;
}

std::string id_text(const Layout& layout, Id id) {
  auto fields = decode(layout, id);
  if (!fields.ok()) return std::to_string(id);
  return fmt::format("{} ({}, node {}/{}, sequence {})", id, format_time(fields->timestamp),
                     fields->datacenter, fields->worker, fields->sequence);
}

std::string where(const check::Location& location) {
  return fmt::format("{}:{}", location.input, location.line);
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// --state-file against the audit logs.
struct StateCheck {
  std::string path;
  std::optional<milliseconds> mark;            // nullopt: nothing at the path
  std::optional<audit::LatestAudited> latest;  // the audit logs' highest ID
  bool behind() const { return latest && (!mark || *mark < latest->time); }
};

Result<StateCheck> check_state_file(const std::string& path, const Layout& layout,
                                    const std::vector<std::string>& audit_logs) {
  auto inspected = inspect_mark(path, layout);
  if (!inspected.ok()) return inspected.error();
  StateCheck state{inspected->path.string(), inspected->mark, std::nullopt};
  for (const std::string& log : audit_logs) {
    auto latest = audit::latest_audited(log, layout, std::nullopt, audit::kWholeAuditLog);
    if (!latest.ok()) return latest.error();
    if (*latest && (!state.latest || (*latest)->id > state.latest->id)) state.latest = *latest;
  }
  return state;
}

std::string state_text(const StateCheck& state, const Layout& layout) {
  const std::string mark = state.mark ? format_time(*state.mark) : "none (no file)";
  const std::string latest =
      state.latest ? id_text(layout, state.latest->id) : "none (no record in the audit logs)";
  std::string out = fmt::format("state file        {}: mark {}\n  latest audited ID {}\n",
                                state.path, mark, latest);
  if (state.behind()) {
    out +=
        "  the audit logs hold IDs above the mark: the state directory was restored from an older "
        "copy (or its state file removed); a node started on it would issue them again. Start the "
        "node with its audit_log set (it then starts above them) or restore a newer copy\n";
  }
  return out;
}

std::string text_report(const check::CheckReport& r, const Layout& layout, milliseconds max_drift,
                        double seconds, const std::optional<StateCheck>& state) {
  std::string out = fmt::format(
      "checked {} from {} in {:.2f} s ({:.1f} M IDs/s), layout {}\n", plural(r.ids, "ID", "IDs"),
      plural(r.sources.size(), "source", "sources"), seconds,
      seconds > 0 ? static_cast<double>(r.ids) / seconds / 1e6 : 0.0, describe(layout));
  out += fmt::format("duplicates        {}", r.duplicates);
  if (r.duplicates > 0) out += fmt::format(" ({} distinct IDs)", r.duplicated_ids);
  out += '\n';
  for (const auto& d : r.duplicate_examples) {
    out += fmt::format("  {} seen {} times\n", id_text(layout, d.id), d.occurrences);
  }
  out += fmt::format("order violations  {}\n", r.order_violations);
  for (const auto& v : r.order_examples) {
    out +=
        fmt::format("  {} (source {}): {} after {}\n", where(v.where), v.source, v.id, v.previous);
  }
  out +=
      fmt::format("future IDs        {} (later than now + {} ms)\n", r.future, max_drift.count());
  for (const auto& f : r.future_examples) {
    out += fmt::format("  {}: {}\n", where(f.where), id_text(layout, f.id));
  }
  if (r.audited) {
    const auto& a = r.audit;
    out += fmt::format("audit             {}, {}, {} ({} torn, dropped)\n",
                       plural(a.files, "file", "files"),
                       plural(a.incarnations, "incarnation", "incarnations"),
                       plural(a.records, "record", "records"), a.torn_records);
    out += fmt::format("missing           {} (IDs no audit record covers)\n", a.missing);
    for (Id id : a.missing_examples) out += fmt::format("  {}\n", id_text(layout, id));
    out += fmt::format("overlaps          {} (audit records covering the same ID)\n", a.overlaps);
    for (const auto& o : a.overlap_examples) {
      out += fmt::format("  {}..{} and {}..{}\n", o.first_a, o.last_a, o.first_b, o.last_b);
    }
  }
  if (state) out += state_text(*state, layout);
  if (!r.nodes.empty()) {
    out += "nodes\n";
    out += fmt::format("  {:>10}  {:>6}  {:>12}  {:<24}  {}\n", "datacenter", "worker", "IDs",
                       "first", "last");
    for (const auto& n : r.nodes) {
      out += fmt::format("  {:>10}  {:>6}  {:>12}  {:<24}  {}\n", n.datacenter, n.worker, n.ids,
                         format_time(n.first), format_time(n.last));
    }
  }
  if (r.sources.size() > 1) {
    out += "sources\n";
    for (std::size_t i = 0; i < r.sources.size() && i < kSourcesShown; ++i) {
      const auto& s = r.sources[i];
      out += fmt::format("  {}: {}, {}\n", s.name, plural(s.ids, "ID", "IDs"),
                         plural(s.order_violations, "order violation", "order violations"));
    }
    if (r.sources.size() > kSourcesShown) {
      out += fmt::format("  ... and {} more\n", r.sources.size() - kSourcesShown);
    }
  }
  if (r.ok() && !(state && state->behind())) {
    out += "result            OK\n";
  } else {
    std::vector<std::string> failed;
    if (r.duplicates > 0) failed.push_back(plural(r.duplicates, "duplicate", "duplicates"));
    if (r.order_violations > 0) {
      failed.push_back(plural(r.order_violations, "order violation", "order violations"));
    }
    if (r.future > 0) failed.push_back(plural(r.future, "future ID", "future IDs"));
    if (r.audit.missing > 0) {
      failed.push_back(plural(r.audit.missing, "ID missing from the audit logs",
                              "IDs missing from the audit logs"));
    }
    if (r.audit.overlaps > 0) {
      failed.push_back(
          plural(r.audit.overlaps, "overlapping audit record", "overlapping audit records"));
    }
    if (state && state->behind()) failed.push_back("state file behind the audit logs");
    out += fmt::format("result            FAILED: {}\n", fmt::join(failed, ", "));
  }
  return out;
}

// The "state_file" object of `snowid check --json`.
nlohmann::json state_json(const StateCheck& state) {
  const auto id = [](Id value) { return std::to_string(value); };
  return {
      {"path", state.path},
      {"mark_ms", state.mark ? nlohmann::json(state.mark->count()) : nullptr},
      {"latest_audited_id", state.latest ? nlohmann::json(id(state.latest->id)) : nullptr},
      {"latest_audited_ms", state.latest ? nlohmann::json(state.latest->time.count()) : nullptr},
      {"behind", state.behind()}};
}

// The "audit" object of `snowid check --json`.
nlohmann::json audit_json(const check::AuditSummary& a) {
  const auto id = [](Id value) { return std::to_string(value); };
  nlohmann::json missing = nlohmann::json::array();
  for (Id m : a.missing_examples) missing.push_back(id(m));
  nlohmann::json overlaps = nlohmann::json::array();
  for (const auto& o : a.overlap_examples) {
    overlaps.push_back(
        nlohmann::json::array({nlohmann::json::array({id(o.first_a), id(o.last_a)}),
                               nlohmann::json::array({id(o.first_b), id(o.last_b)})}));
  }
  return {{"files", a.files},
          {"records", a.records},
          {"incarnations", a.incarnations},
          {"torn_records", a.torn_records},
          {"missing", {{"count", a.missing}, {"examples", missing}}},
          {"overlaps", {{"count", a.overlaps}, {"examples", overlaps}}}};
}

nlohmann::json json_report(const check::CheckReport& r, const Layout& layout, milliseconds now,
                           milliseconds max_drift, double seconds,
                           const std::optional<StateCheck>& state) {
  auto id = [](Id value) { return std::to_string(value); };
  auto location = [](const check::Location& l) {
    return nlohmann::json{{"input", l.input}, {"line", l.line}};
  };
  nlohmann::json duplicates = nlohmann::json::array();
  for (const auto& d : r.duplicate_examples) {
    duplicates.push_back({{"id", id(d.id)}, {"occurrences", d.occurrences}});
  }
  nlohmann::json order = nlohmann::json::array();
  for (const auto& v : r.order_examples) {
    order.push_back({{"source", v.source},
                     {"where", location(v.where)},
                     {"previous", id(v.previous)},
                     {"id", id(v.id)}});
  }
  nlohmann::json future = nlohmann::json::array();
  for (const auto& f : r.future_examples) {
    future.push_back({{"where", location(f.where)}, {"id", id(f.id)}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : r.nodes) {
    nodes.push_back({{"datacenter", n.datacenter},
                     {"worker", n.worker},
                     {"ids", n.ids},
                     {"first_ms", n.first.count()},
                     {"first", format_time(n.first)},
                     {"last_ms", n.last.count()},
                     {"last", format_time(n.last)}});
  }
  nlohmann::json sources = nlohmann::json::array();
  for (std::size_t i = 0; i < r.sources.size() && i < kSourcesInJson; ++i) {
    const auto& s = r.sources[i];
    sources.push_back({{"name", s.name}, {"ids", s.ids}, {"order_violations", s.order_violations}});
  }
  nlohmann::json out{
      {"ok", r.ok() && !(state && state->behind())},
      {"state_file", state ? state_json(*state) : nullptr},
      {"ids", r.ids},
      {"seconds", seconds},
      {"layout", describe(layout)},
      {"source_count", r.sources.size()},
      {"sources", std::move(sources)},
      {"duplicates",
       {{"count", r.duplicates}, {"distinct", r.duplicated_ids}, {"examples", duplicates}}},
      {"order_violations", {{"count", r.order_violations}, {"examples", order}}},
      {"future",
       {{"count", r.future},
        {"now_ms", now.count()},
        {"max_drift_ms", max_drift.count()},
        {"examples", future}}},
      {"nodes", std::move(nodes)},
      {"audit", nullptr},
  };
  if (r.audited) out["audit"] = audit_json(r.audit);
  return out;
}

int print(const std::string& text) {
  if (std::fputs(text.c_str(), stdout) < 0 || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "snowid: cannot write output: %s\n", std::strerror(errno));
    return kExitFindings;
  }
  return 0;
}

}  // namespace

CheckCommand::CheckCommand(CLI::App& app, LayoutArgs& layout_args) : layout_args_(layout_args) {
  check_ = app.add_subcommand(
      "check",
      "Check lists of issued IDs: duplicates, order per source, future timestamps, audit "
      "coverage");
  check_->add_option("files", inputs_, "Files of IDs, one per line ('-' or none: standard input)");
  check_
      ->add_option("--audit", audit_logs_,
                   "snowidd audit log (option audit_log); repeat for several")
      ->allow_extra_args(false);
  check_
      ->add_option("--max-drift", max_drift_,
                   "How far ahead of --now an ID's time may be (250ms, 1s, 5m, 1h)")
      ->default_str("1s");
  check_->add_option("--now", now_, "The present, Unix ms or ISO 8601 (default: the clock)");
  check_->add_option("--state-file", state_file_,
                     "A node's state file (generator.state) to compare with the --audit logs: IDs "
                     "audited above its mark mean it was restored from an older copy");
  check_->add_flag("--json", json_, "Print the report as JSON");
  progress_.add_to(*check_);
  check_->footer(kFooter);
  layout_args.add_to(*check_);
}

bool CheckCommand::parsed() const { return check_->parsed(); }

int CheckCommand::run() const {
  auto fail = [](int code, const std::string& message) {
    std::string line = message;
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::fprintf(stderr, "snowid: %s\n", line.c_str());
    return code;
  };
  auto layout = layout_args_.resolve_layout();
  if (!layout.ok()) return fail(kExitUsage, layout.error().message);
  auto max_drift = parse_duration(max_drift_);
  if (!max_drift.ok()) return fail(kExitUsage, max_drift.error().message);
  milliseconds now = SystemClock::instance().now_fresh();
  if (!now_.empty()) {
    auto parsed_now = parse_time(now_);
    if (!parsed_now.ok()) return fail(kExitUsage, "--now: " + parsed_now.error().message);
    now = *parsed_now;
  }

  const auto started = std::chrono::steady_clock::now();
  check::CheckOptions options;
  options.layout = *layout;
  options.now = now;
  options.max_drift = *max_drift;
  check::IdChecker checker(options);
  auto buffer = std::make_unique_for_overwrite<char[]>(kReadBytes);
  if (!state_file_.empty() && audit_logs_.empty()) {
    return fail(kExitUsage, "--state-file needs the node's audit log (--audit FILE)");
  }
  const std::vector<std::string> id_inputs =
      inputs_.empty() && state_file_.empty() ? std::vector<std::string>{"-"} : inputs_;
  std::vector<std::string> every_input = audit_logs_;
  every_input.insert(every_input.end(), id_inputs.begin(), id_inputs.end());
  ProgressBar::Options bar;
  bar.total = total_bytes(every_input);
  bar.unit = ProgressUnit::kBytes;
  bar.mode = progress_.mode();
  bar.check_every = 1;  // advanced once per read of up to 4 MiB: a clock read per read
  ProgressBar progress(bar);
  auto read_all = [&](const std::vector<std::string>& paths, bool audit) -> Status {
    for (const std::string& path : paths) {
      auto fd = open_input(path, checker);
      if (!fd.ok()) return fd.error();
      if (audit) {
        checker.begin_audit(path);
      } else {
        checker.begin_ids(path);
      }
      Status s = read_into(checker, *fd, path, buffer.get(), progress);
      if (*fd != STDIN_FILENO) ::close(*fd);
      if (!s.ok()) return s;
    }
    return {};
  };
  Status read = read_all(audit_logs_, true);
  if (read.ok()) read = read_all(id_inputs, false);
  progress.finish();  // before any line on stderr or the report
  if (!read.ok()) {
    const bool bad_input = read.error().code == ErrorCode::kInvalidArgument;
    return fail(bad_input ? kExitUsage : kExitFindings, read.error().message);
  }
  const check::CheckReport report = checker.finish();
  std::optional<StateCheck> state;
  if (!state_file_.empty()) {
    auto compared = check_state_file(state_file_, *layout, audit_logs_);
    if (!compared.ok()) return fail(kExitFindings, compared.error().message);
    state = std::move(*compared);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  const int printed =
      json_ ? print(json_report(report, *layout, now, *max_drift, seconds, state).dump(2) + "\n")
            : print(text_report(report, *layout, *max_drift, seconds, state));
  if (printed != 0) return printed;
  return report.ok() && !(state && state->behind()) ? 0 : kExitFindings;
}

}  // namespace snowid::cli
