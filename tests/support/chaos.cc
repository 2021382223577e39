#include "chaos.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server_process.h"
#include "snowid/v1/snowid.grpc.pb.h"

namespace snowid::test {

using std::chrono::milliseconds;

bool chaos_quick() {
  const char* quick = std::getenv("SNOWID_CHAOS_QUICK");
  return quick != nullptr && *quick != '\0' && std::string(quick) != "0";
}

void NodeAddress::set(int http_port, int grpc_port) {
  std::lock_guard lock(mutex_);
  ports_ = Ports{ports_.incarnation + 1, http_port, grpc_port};
}

void NodeAddress::retire() {
  std::lock_guard lock(mutex_);
  ports_ = Ports{ports_.incarnation + 1, 0, 0};
}

NodeAddress::Ports NodeAddress::get() const {
  std::lock_guard lock(mutex_);
  return ports_;
}

struct Load::Client {
  std::size_t node = 0;
  bool grpc = false;
  int index = 0;  // among the node's clients of its kind
  int connections = 0;
  std::vector<Source> sources;
  std::vector<Sample> samples;
  std::thread thread;
};

Load::Load(std::vector<NodeAddress*> nodes, LoadOptions options)
    : nodes_(std::move(nodes)),
      options_(std::move(options)),
      counters_(new Counters[nodes_.size()]) {
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    for (int kind = 0; kind < 2; ++kind) {
      const int count = kind == 0 ? options_.http_clients : options_.grpc_clients;
      for (int i = 0; i < count; ++i) {
        auto client = std::make_unique<Client>();
        client->node = n;
        client->grpc = kind == 1;
        client->index = i;
        clients_.push_back(std::move(client));
      }
    }
  }
  for (auto& client : clients_) {
    Client* c = client.get();
    c->thread = std::thread([this, c] { run(*c); });
  }
}

Load::~Load() { stop(); }

void Load::wait() {
  for (auto& client : clients_) {
    if (client->thread.joinable()) client->thread.join();
  }
}

void Load::stop() {
  stop_ = true;
  wait();
}

void Load::note(Client& client, Sample sample, const std::string& detail) {
  Counters& counters = counters_[client.node];
  switch (sample.outcome) {
    case Outcome::kServed:
      ++counters.served;
      break;
    case Outcome::kRefused:
      ++counters.refused;
      break;
    case Outcome::kFailed:
      ++counters.failed;
      break;
  }
  client.samples.push_back(sample);
  if (!detail.empty()) {
    std::lock_guard lock(unexpected_mutex_);
    if (unexpected_.size() < 2000) unexpected_ += detail + "; ";
  }
}

namespace {

// Bare numbers, one per line; false if a line is not one.
bool parse_lines(const std::string& body, std::vector<Number>& out) {
  const char* p = body.data();
  const char* end = p + body.size();
  while (p < end) {
    Number value = 0;
    const auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc{} || next == end || *next != '\n') return false;
    out.push_back(value);
    p = next + 1;
  }
  return true;
}

}  // namespace

// One client connection: an HTTP keep-alive connection or a gRPC channel.
class Load::Channel {
 public:
  virtual ~Channel() = default;
  // One request. A served answer's IDs are appended to `ids`; `detail` says
  // what was unexpected about an answer that was not served, if anything.
  virtual Outcome request(std::vector<Number>& ids, std::string& detail) = 0;
  // Whether the connection is still usable after a failed request.
  virtual bool survives_failure() const = 0;
  // Whether the connection may move to another process by itself (then it
  // is dropped as soon as its node's incarnation changes).
  virtual bool follows_restarts() const { return false; }
};

namespace {

class HttpChannel final : public Load::Channel {
 public:
  HttpChannel(int port, const std::string& target)
      : connection_(port), request_("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n") {}

  Outcome request(std::vector<Number>& ids, std::string& detail) override {
    HttpReply reply;
    if (connection_.send(request_)) reply = connection_.read(milliseconds{10000});
    if (reply.status == 200) {
      numbers_.clear();
      if (parse_lines(reply.body, numbers_)) {
        ids.insert(ids.end(), numbers_.begin(), numbers_.end());
        return Outcome::kServed;
      }
      detail = "unparsable 200 answer: " + reply.body.substr(0, 100);
    } else if (reply.status == 503) {
      return Outcome::kRefused;
    } else if (reply.status != 0) {
      detail = std::to_string(reply.status) + " " + reply.body.substr(0, 200);
    }
    return Outcome::kFailed;
  }
  // After a failure the framing of the connection cannot be trusted.
  bool survives_failure() const override { return false; }

 private:
  HttpConnection connection_;
  std::string request_;
  std::vector<Number> numbers_;
};

class GrpcChannel final : public Load::Channel {
 public:
  // Connects at once (a channel otherwise connects at its first call), so
  // that the caller can tell which incarnation it reached.
  GrpcChannel(int port, std::uint32_t count) {
    // A channel of its own (no subchannel shared with the other clients).
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                             grpc::InsecureChannelCredentials(), arguments);
    channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds{1});
    stub_ = v1::IdService::NewStub(channel);
    request_.set_count(count);
  }

  Outcome request(std::vector<Number>& ids, std::string& detail) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    v1::NextIdsResponse response;
    const grpc::Status status = stub_->NextIds(&context, request_, &response);
    if (status.ok()) {
      for (const auto id : response.ids()) ids.push_back(static_cast<Number>(id));
      return Outcome::kServed;
    }
    // The node's refusal. A channel that lost its server says UNAVAILABLE
    // too: an HTTP client beside this one shows that as a failure.
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) return Outcome::kRefused;
    // A call that reached a server while it shut down: a lost connection.
    if (status.error_code() == grpc::StatusCode::CANCELLED) return Outcome::kFailed;
    detail = "gRPC " + std::to_string(static_cast<int>(status.error_code())) + " " +
             status.error_message().substr(0, 200);
    return Outcome::kFailed;
  }
  bool survives_failure() const override { return true; }
  // A gRPC channel reconnects by itself, possibly to the next incarnation
  // on the same port.
  bool follows_restarts() const override { return true; }

 private:
  std::unique_ptr<v1::IdService::Stub> stub_;
  v1::NextIdsRequest request_;
};

}  // namespace

void Load::run(Client& client) {
  NodeAddress& node = *nodes_[client.node];
  std::unique_ptr<Channel> channel;
  for (int done = 0; !stop_ && (options_.requests == 0 || done < options_.requests);) {
    if (paused_) {
      std::this_thread::sleep_for(milliseconds{1});
      continue;
    }
    if (!channel) {
      const NodeAddress::Ports ports = node.get();
      const int port = client.grpc ? ports.grpc : ports.http;
      if (port == 0) {
        std::this_thread::sleep_for(milliseconds{1});
        continue;
      }
      std::unique_ptr<Channel> made;
      if (client.grpc) {
        made = std::make_unique<GrpcChannel>(port, options_.grpc_count);
      } else {
        made = std::make_unique<HttpChannel>(port, options_.http_target);
      }
      if (node.get().incarnation != ports.incarnation) continue;  // made across a restart
      channel = std::move(made);
      client.sources.push_back(
          Source{"n" + std::to_string(client.node) + "-" + (client.grpc ? "grpc" : "http") +
                     std::to_string(client.index) + "-c" + std::to_string(client.connections++),
                 client.node,
                 ports.incarnation,
                 {}});
    }
    if (channel->follows_restarts() &&
        node.get().incarnation != client.sources.back().incarnation) {
      channel.reset();
      continue;
    }
    Sample sample{SteadyClock::now(), {}, client.node, Outcome::kFailed};
    std::string detail;
    sample.outcome = channel->request(client.sources.back().ids, detail);
    sample.received = SteadyClock::now();
    ++done;
    if (sample.outcome == Outcome::kFailed && detail.empty() &&
        !options_.connection_loss_expected) {
      detail = "no answer from node " + std::to_string(client.node);
    }
    note(client, sample, detail);
    if (sample.outcome == Outcome::kFailed && !channel->survives_failure()) channel.reset();
    if (options_.pause.count() > 0) std::this_thread::sleep_for(options_.pause);
  }
}

bool Load::wait_served(const std::vector<std::uint64_t>& before, std::uint64_t more,
                       milliseconds limit) const {
  return wait_until(
      [&] {
        for (std::size_t n = 0; n < nodes_.size(); ++n) {
          if (served(n) < before[n] + more) return false;
        }
        return true;
      },
      limit);
}

std::vector<std::uint64_t> Load::served_counts() const {
  std::vector<std::uint64_t> counts;
  for (std::size_t n = 0; n < nodes_.size(); ++n) counts.push_back(served(n));
  return counts;
}

std::vector<Source> Load::sources() const {
  std::vector<Source> all;
  for (const auto& client : clients_) {
    all.insert(all.end(), client->sources.begin(), client->sources.end());
  }
  return all;
}

std::vector<Sample> Load::samples() const {
  std::vector<Sample> all;
  for (const auto& client : clients_) {
    all.insert(all.end(), client->samples.begin(), client->samples.end());
  }
  std::sort(all.begin(), all.end(),
            [](const Sample& a, const Sample& b) { return a.sent < b.sent; });
  return all;
}

std::string Load::unexpected() const {
  std::lock_guard lock(unexpected_mutex_);
  return unexpected_;
}

std::optional<milliseconds> recovery_time(const std::vector<Sample>& samples,
                                          SteadyClock::time_point fault_end) {
  std::optional<SteadyClock::time_point> last_bad;
  for (const Sample& s : samples) {
    if (s.outcome != Outcome::kServed && (!last_bad || s.received > *last_bad)) {
      last_bad = s.received;
    }
  }
  if (!last_bad || *last_bad < fault_end) return milliseconds{0};
  std::optional<SteadyClock::time_point> back;
  for (const Sample& s : samples) {
    if (s.outcome == Outcome::kServed && s.sent >= *last_bad && (!back || s.received < *back)) {
      back = s.received;
    }
  }
  if (!back) return std::nullopt;
  return std::chrono::duration_cast<milliseconds>(*back - fault_end);
}

std::size_t count_sent(const std::vector<Sample>& samples, Outcome outcome,
                       SteadyClock::time_point from, SteadyClock::time_point to) {
  return static_cast<std::size_t>(std::count_if(
      samples.begin(), samples.end(),
      [&](const Sample& s) { return s.outcome == outcome && s.sent >= from && s.sent < to; }));
}

std::size_t count_within(const std::vector<Sample>& samples, Outcome outcome,
                         SteadyClock::time_point from, SteadyClock::time_point to) {
  return static_cast<std::size_t>(std::count_if(
      samples.begin(), samples.end(),
      [&](const Sample& s) { return s.outcome == outcome && s.sent >= from && s.received <= to; }));
}

std::vector<Source> node_histories(const std::vector<Source>& sources) {
  // node -> incarnation -> IDs
  std::map<std::size_t, std::map<std::uint64_t, std::vector<Number>>> by_node;
  for (const Source& s : sources) {
    auto& ids = by_node[s.node][s.incarnation];
    ids.insert(ids.end(), s.ids.begin(), s.ids.end());
  }
  std::vector<Source> histories;
  for (auto& [node, incarnations] : by_node) {
    Source history{"n" + std::to_string(node) + "-history", node, 0, {}};
    for (auto& [incarnation, ids] : incarnations) {
      std::sort(ids.begin(), ids.end());
      history.ids.insert(history.ids.end(), ids.begin(), ids.end());
    }
    histories.push_back(std::move(history));
  }
  return histories;
}

std::vector<std::string> write_id_files(const std::string& dir,
                                        const std::vector<Source>& sources) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  std::string text;
  for (const Source& source : sources) {
    if (source.ids.empty()) continue;
    text.clear();
    for (const Number id : source.ids) (text += std::to_string(id)) += '\n';
    files.push_back(dir + "/" + source.name + ".ids");
    std::ofstream out(files.back(), std::ios::binary | std::ios::trunc);
    out << text;
  }
  return files;
}

IdCheck check_id_files(const std::vector<std::string>& files, const std::string& max_drift) {
  IdCheck result;
  std::vector<std::string> argv = {SNOWID_CLI_PATH, "check", "--json", "--max-drift", max_drift};
  argv.insert(argv.end(), files.begin(), files.end());
  const ProcessResult run = run_process(argv, {}, std::chrono::seconds{120});
  const auto report = nlohmann::json::parse(run.out, nullptr, false);
  if ((run.exit_code != 0 && run.exit_code != 1) || !report.is_object()) {
    result.problems = "snowid check failed (exit " + std::to_string(run.exit_code) +
                      (run.timed_out ? ", timed out" : "") + "): " + run.err.substr(0, 500);
    return result;
  }
  result.ids_checked = report["ids"].get<std::uint64_t>();
  result.duplicates = report["duplicates"]["count"].get<std::uint64_t>();
  result.order_violations = report["order_violations"]["count"].get<std::uint64_t>();
  if (run.exit_code == 0) return result;
  // What it found, for the failure message (its report holds a few examples of each).
  result.problems = "snowid check: ";
  for (const auto& d : report["duplicates"]["examples"]) {
    result.problems += "duplicate " + d["id"].get<std::string>() + "; ";
  }
  for (const auto& o : report["order_violations"]["examples"]) {
    result.problems += o["source"].get<std::string>() + ": " + o["id"].get<std::string>() +
                       " follows " + o["previous"].get<std::string>() + "; ";
  }
  const auto future = report["future"]["count"].get<std::uint64_t>();
  if (future > 0) result.problems += std::to_string(future) + " IDs from the future; ";
  return result;
}

std::chrono::milliseconds cpu_time(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  // Fields after the command name (which may hold spaces): state is field 3,
  // utime 14 and stime 15, in clock ticks.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return milliseconds{-1};
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return milliseconds{(utime + stime) * 1000 / (ticks > 0 ? ticks : 100)};
}

std::optional<double> metric(const std::string& text, const std::string& name) {
  for (const std::string& line : split_lines(text)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ' ') {
      return std::stod(line.substr(name.size() + 1));
    }
  }
  return std::nullopt;
}

double metric(int port, const std::string& series) {
  return metric(http_get(port, "/metrics").body, series).value_or(-1);
}

bool wait_until(const std::function<bool()>& condition, milliseconds limit) {
  const auto deadline = SteadyClock::now() + limit;
  while (!condition()) {
    if (SteadyClock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds{10});
  }
  return true;
}

void append_record(const ScenarioRecord& record) {
  const char* path = std::getenv("SNOWID_CHAOS_REPORT");
  if (path == nullptr || *path == '\0') return;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  nlohmann::ordered_json line = {{"scenario", record.scenario},
                                 {"fault", record.fault},
                                 {"injection", record.injection},
                                 {"expected", record.expected},
                                 {"measured", record.measured},
                                 {"answers", record.answers},
                                 {"refused", record.refused},
                                 {"ids_checked", record.ids_checked},
                                 {"duplicates", record.duplicates},
                                 {"order_violations", record.order_violations},
                                 {"recovery_ms", nullptr},
                                 {"result", record.result},
                                 {"duration_ms", record.duration_ms},
                                 {"date", date}};
  if (record.recovery_ms) line["recovery_ms"] = *record.recovery_ms;
  const std::string text = line.dump() + "\n";
  // One write of the whole line under an exclusive lock: scenarios run in
  // parallel processes (ctest --parallel) and append to the same file.
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ::flock(fd, LOCK_EX);
  const ssize_t written = ::write(fd, text.data(), text.size());
  (void)written;
  ::close(fd);  // releases the lock
}

namespace {

std::string scenario_parent() {
  std::error_code ec;
  if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) {
    return "/dev/shm";
  }
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

}  // namespace

Scenario::Scenario() : dir(scenario_parent()) {}

void Scenario::describe(std::string name, std::string fault, std::string injection,
                        std::string expected) {
  record.scenario = std::move(name);
  record.fault = std::move(fault);
  record.injection = std::move(injection);
  record.expected = std::move(expected);
}

void Scenario::check(const std::vector<Source>& sources, bool histories) {
  const std::string files_dir = dir.file("ids");
  const IdCheck found = check_id_files(write_id_files(files_dir, sources), max_drift);
  record.ids_checked += found.ids_checked;
  record.duplicates += found.duplicates;
  record.order_violations += found.order_violations;
  EXPECT_TRUE(found.clean()) << found.problems;
  EXPECT_GT(found.ids_checked, 0u) << "no ID was handed out";
  if (!histories) return;
  // The histories hold the same IDs again: only their order counts here.
  const IdCheck history =
      check_id_files(write_id_files(files_dir, node_histories(sources)), max_drift);
  record.order_violations += history.order_violations;
  EXPECT_EQ(history.order_violations, 0u)
      << "an incarnation handed out IDs not above the previous one's: " << history.problems;
}

void Scenario::count(const Load& load) {
  for (std::size_t n = 0; n < load.nodes(); ++n) {
    record.answers += load.served(n) + load.refused(n) + load.failed(n);
    record.refused += load.refused(n);
  }
}

void Scenario::finish() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (record.scenario.empty()) {
    record.scenario = std::string(info->test_suite_name()) + "/" + info->name();
  }
  record.result = ::testing::Test::IsSkipped()    ? "skipped"
                  : ::testing::Test::HasFailure() ? "fail"
                                                  : "pass";
  record.duration_ms =
      std::chrono::duration_cast<milliseconds>(SteadyClock::now() - began_).count();
  append_record(record);
}

}  // namespace snowid::test
