#include "zookeeper_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace snowid::coord {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

// The library's log goes nowhere but here: its lines (a refused connection,
// per attempt) would flood the server's log, which reports store failures
// itself. The last one explains a session that could not be opened.
std::mutex last_log_mutex;
std::string last_log_line;

void keep_log_line(const char* message) {
  std::lock_guard<std::mutex> lock(last_log_mutex);
  last_log_line = message;
}

std::string last_library_error() {
  std::lock_guard<std::mutex> lock(last_log_mutex);
  return last_log_line;
}

// What a request and its completion share. The completion, on a library
// thread, may run after the request gave up waiting, so it owns a reference.
struct Pending {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  int code = ZOK;
  std::string data;
  Stat stat{};
  std::vector<std::string> names;
  // multi(): what the library reads and fills until the completion runs.
  std::vector<zoo_op_t> ops;
  std::vector<zoo_op_result_t> results;
  std::vector<Stat> stats;
};
using PendingRef = std::shared_ptr<Pending>;

// Runs `fill` on the request's state, wakes the request and drops the
// completion's reference.
template <typename Fill>
void complete(const void* context, int code, Fill fill) {
  auto* ref = static_cast<PendingRef*>(const_cast<void*>(context));
  {
    std::lock_guard<std::mutex> lock((*ref)->mutex);
    (*ref)->code = code;
    if (code == ZOK) fill(**ref);
    (*ref)->done = true;
  }
  (*ref)->finished.notify_all();
  delete ref;
}

void void_done(int code, const void* context) {
  complete(context, code, [](Pending&) {});
}
void string_done(int code, const char*, const void* context) {
  complete(context, code, [](Pending&) {});
}
void stat_done(int code, const Stat* stat, const void* context) {
  complete(context, code, [stat](Pending& p) {
    if (stat != nullptr) p.stat = *stat;
  });
}
void data_done(int code, const char* value, int length, const Stat* stat, const void* context) {
  complete(context, code, [=](Pending& p) {
    if (value != nullptr && length > 0) p.data.assign(value, static_cast<std::size_t>(length));
    if (stat != nullptr) p.stat = *stat;
  });
}
void strings_done(int code, const String_vector* strings, const void* context) {
  complete(context, code, [strings](Pending& p) {
    if (strings == nullptr) return;
    for (int i = 0; i < strings->count; ++i) p.names.emplace_back(strings->data[i]);
  });
}

// Codes that answer the question asked rather than report a failure.
bool expected(int code) {
  return code == ZOK || code == ZNONODE || code == ZNODEEXISTS || code == ZBADVERSION ||
         code == ZNOTEMPTY;
}

ZnodeStat stat_of(const Stat& stat) {
  return {stat.version, stat.ephemeralOwner, std::chrono::milliseconds{stat.ctime},
          std::chrono::milliseconds{stat.mtime}};
}

}  // namespace

struct ZooKeeperSession::Watch {
  std::mutex mutex;
  std::condition_variable changed;
  int state = 0;  // the last session state the library reported

  static void on_event(zhandle_t*, int type, int state, const char*, void* context) {
    if (type != ZOO_SESSION_EVENT) return;
    auto* watch = static_cast<Watch*>(context);
    {
      std::lock_guard<std::mutex> lock(watch->mutex);
      watch->state = state;
    }
    watch->changed.notify_all();
  }
};

bool ZnodeAnswer::ok() const { return code == ZOK; }

std::string ZnodeAnswer::describe(const std::string& path) const {
  if (code == ZOPERATIONTIMEOUT) return fmt::format("{}: no answer from ZooKeeper in time", path);
  if (code == ZNOAUTH) {
    return fmt::format(
        "{}: ZooKeeper refused access (not signed in as the user that "
        "created it; check the ZooKeeper user and password)",
        path);
  }
  return fmt::format("{}: {}", path, zerror(code));
}

ZooKeeperSession::ZooKeeperSession(const ZooKeeperOptions& options, StoreCounters& counters)
    : options_(options), counters_(counters), watch_(std::make_unique<Watch>()) {}

ZooKeeperSession::~ZooKeeperSession() {
  // Ends the session at once (its ephemeral znodes go) and calls every
  // completion still pending, which releases its state.
  if (handle_ != nullptr) zookeeper_close(handle_);
}

Result<std::unique_ptr<ZooKeeperSession>> ZooKeeperSession::open(const ZooKeeperOptions& options,
                                                                 StoreCounters& counters) {
  static std::once_flag quiet;
  std::call_once(quiet, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); });
  std::unique_ptr<ZooKeeperSession> session(new ZooKeeperSession(options, counters));
  const std::string hosts = fmt::format("{}", fmt::join(options.endpoints, ","));
  const auto ttl = std::chrono::duration_cast<milliseconds>(options.lease_ttl);
  const auto started = steady_clock::now();
  session->handle_ = zookeeper_init2(hosts.c_str(), &Watch::on_event, static_cast<int>(ttl.count()),
                                     nullptr, session->watch_.get(), 0, keep_log_line);
  if (session->handle_ == nullptr) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("cannot start a ZooKeeper client for {}", hosts)};
  }
  const milliseconds wait = options.request_timeout * static_cast<long long>(std::max<std::size_t>(
                                                          1, options.endpoints.size()));
  int state = 0;
  {
    std::unique_lock<std::mutex> lock(session->watch_->mutex);
    session->watch_->changed.wait_for(lock, wait, [&] {
      const int s = session->watch_->state;
      return s == ZOO_CONNECTED_STATE || s == ZOO_EXPIRED_SESSION_STATE ||
             s == ZOO_AUTH_FAILED_STATE;
    });
    state = session->watch_->state;
  }
  counters.record(
      std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - started),
      state != ZOO_CONNECTED_STATE);
  if (state != ZOO_CONNECTED_STATE) {
    const std::string library = last_library_error();
    return Error{ErrorCode::kUnavailable,
                 fmt::format("no ZooKeeper server of {} opened a session within {} ms{}", hosts,
                             wait.count(), library.empty() ? "" : " (last: " + library + ")")};
  }
  session->id_ = zoo_client_id(session->handle_)->client_id;
  session->timeout_ = milliseconds{zoo_recv_timeout(session->handle_)};
  if (!options.user.empty()) {
    const std::string credentials = options.user + ":" + options.password;
    auto pending = std::make_shared<Pending>();
    auto* ref = new PendingRef(pending);
    const int submitted = zoo_add_auth(session->handle_, "digest", credentials.c_str(),
                                       static_cast<int>(credentials.size()), void_done, ref);
    // The library registers the completion only after these two checks.
    if (submitted == ZBADARGUMENTS || submitted == ZINVALIDSTATE) delete ref;
    std::unique_lock<std::mutex> lock(pending->mutex);
    const bool answered =
        submitted == ZOK &&
        pending->finished.wait_for(lock, options.request_timeout, [&] { return pending->done; });
    if (!answered || pending->code != ZOK) {
      return Error{
          ErrorCode::kUnavailable,
          fmt::format("ZooKeeper did not accept the digest credentials of user '{}': {}",
                      options.user, answered ? zerror(pending->code) : "no answer in time")};
    }
    counters.sign_ins.fetch_add(1);
    session->private_acl_ = true;
  }
  return session;
}

bool ZooKeeperSession::usable() const {
  std::lock_guard<std::mutex> lock(watch_->mutex);
  return watch_->state != ZOO_EXPIRED_SESSION_STATE && watch_->state != ZOO_AUTH_FAILED_STATE;
}

namespace {

// Submits a request through `submit` (given the completion's reference) and
// waits up to `timeout` for its answer; `read` takes what it needs from the
// state then.
template <typename Submit, typename Read>
ZnodeAnswer await(StoreCounters& counters, milliseconds timeout, Submit submit, Read read,
                  PendingRef pending = std::make_shared<Pending>()) {
  const auto started = steady_clock::now();
  auto* ref = new PendingRef(pending);
  const int submitted = submit(static_cast<const void*>(ref));
  ZnodeAnswer answer;
  if (submitted != ZOK) {
    // The library registers the completion only after these two checks.
    if (submitted == ZBADARGUMENTS || submitted == ZINVALIDSTATE) delete ref;
    answer.code = submitted;
  } else {
    std::unique_lock<std::mutex> lock(pending->mutex);
    if (pending->finished.wait_for(lock, timeout, [&] { return pending->done; })) {
      answer.code = pending->code;
      if (answer.code == ZOK) read(*pending);
    } else {
      answer.code = ZOPERATIONTIMEOUT;
    }
  }
  counters.record(
      std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - started),
      !expected(answer.code));
  return answer;
}

}  // namespace

ZnodeAnswer ZooKeeperSession::get(const std::string& path, Znode* node) {
  return await(
      counters_, options_.request_timeout,
      [&](const void* ref) { return zoo_aget(handle_, path.c_str(), 0, data_done, ref); },
      [&](Pending& p) {
        node->data = p.data;
        node->stat = stat_of(p.stat);
      });
}

ZnodeAnswer ZooKeeperSession::exists(const std::string& path, ZnodeStat* stat) {
  return await(
      counters_, options_.request_timeout,
      [&](const void* ref) { return zoo_aexists(handle_, path.c_str(), 0, stat_done, ref); },
      [&](Pending& p) { *stat = stat_of(p.stat); });
}

ZnodeAnswer ZooKeeperSession::create(const std::string& path, const std::string& data,
                                     bool ephemeral, bool open_to_all) {
  const ACL_vector* acl =
      private_acl_ && !open_to_all ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
  return await(
      counters_, options_.request_timeout,
      [&](const void* ref) {
        return zoo_acreate(handle_, path.c_str(), data.data(), static_cast<int>(data.size()), acl,
                           ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT, string_done, ref);
      },
      [](Pending&) {});
}

ZnodeAnswer ZooKeeperSession::remove(const std::string& path, int version) {
  return await(
      counters_, options_.request_timeout,
      [&](const void* ref) { return zoo_adelete(handle_, path.c_str(), version, void_done, ref); },
      [](Pending&) {});
}

ZnodeAnswer ZooKeeperSession::children(const std::string& path, std::vector<std::string>* names) {
  return await(
      counters_, options_.request_timeout,
      [&](const void* ref) {
        return zoo_aget_children(handle_, path.c_str(), 0, strings_done, ref);
      },
      [&](Pending& p) { *names = p.names; });
}

ZnodeAnswer ZooKeeperSession::multi(const std::vector<ZnodeOp>& ops, std::vector<ZnodeStat>* stats,
                                    std::size_t* failed) {
  // Given a handle whose session expired or whose credentials were refused
  // (a negative state, the library's own unrecoverable test), libzookeeper_mt
  // 3.8's zoo_amulti fails the first op and then frees, for each later op, a
  // path it never set: a double free. Such a handle gets no multi (a state
  // that turns between this check and the call is not covered).
  if (zoo_state(handle_) < 0) {
    if (failed != nullptr) *failed = ops.size();  // no op failed: the session did
    return ZnodeAnswer{ZINVALIDSTATE};
  }
  // The library reads the ops' strings and writes the results until the
  // completion runs: they live in the shared state.
  auto pending = std::make_shared<Pending>();
  const ACL_vector* acl = private_acl_ ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
  pending->names.reserve(ops.size() * 2);
  pending->ops.resize(ops.size());
  pending->results.resize(ops.size());
  pending->stats.resize(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ZnodeOp& op = ops[i];
    pending->names.push_back(op.path);
    pending->names.push_back(op.data);
    const char* path = pending->names[2 * i].c_str();
    const std::string& data = pending->names[2 * i + 1];
    zoo_op_t& z = pending->ops[i];
    switch (op.kind) {
      case ZnodeOp::Kind::kCheck:
        zoo_check_op_init(&z, path, op.version);
        break;
      case ZnodeOp::Kind::kSet:
        zoo_set_op_init(&z, path, data.data(), static_cast<int>(data.size()), op.version,
                        &pending->stats[i]);
        break;
      case ZnodeOp::Kind::kCreate:
        zoo_create_op_init(&z, path, data.data(), static_cast<int>(data.size()), acl,
                           op.ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT, nullptr, 0);
        break;
      case ZnodeOp::Kind::kDelete:
        zoo_delete_op_init(&z, path, op.version);
        break;
    }
  }
  Pending* state = pending.get();
  ZnodeAnswer answer = await(
      counters_, options_.request_timeout,
      [&](const void* ref) {
        return zoo_amulti(handle_, static_cast<int>(ops.size()), state->ops.data(),
                          state->results.data(), void_done, ref);
      },
      [&](Pending& p) {
        if (stats == nullptr) return;
        stats->clear();
        for (std::size_t i = 0; i < ops.size(); ++i) {
          if (ops[i].kind == ZnodeOp::Kind::kSet) stats->push_back(stat_of(p.stats[i]));
          // A created znode's version is 0.
          if (ops[i].kind == ZnodeOp::Kind::kCreate) stats->push_back(ZnodeStat{0, 0, {}, {}});
        }
      },
      pending);
  if (!answer.ok() && answer.code != ZOPERATIONTIMEOUT && failed != nullptr) {
    std::lock_guard<std::mutex> lock(pending->mutex);
    *failed = ops.size();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (pending->results[i].err != ZOK && pending->results[i].err != ZRUNTIMEINCONSISTENCY) {
        *failed = i;
        break;
      }
    }
  }
  return answer;
}

}  // namespace snowid::coord
