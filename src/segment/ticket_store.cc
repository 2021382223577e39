// Ticket servers (Flickr): several independent stores serve every tag, each
// handing out only the numbers of its own residue class.
//
// No-repeat invariant, across stores: store k's ranges are cut to the
// numbers n with n % increment == remainder_k. Every member must carry an
// identity recorded in the store itself (SegmentStore::set_ticket_identity)
// with the same increment and a remainder no other member has; a member is
// used only once its identity has been read and checked against the members
// checked before it, so two members that would share numbers are never both
// used. Within one store the usual invariant holds (its ranges never
// overlap), so no number is handed out twice: not by one store, since its
// ranges are disjoint, nor by two, since their residue classes are.
//
// What the check cannot see: a store listed in one node's configuration only,
// with the remainder of a store listed in another node's. Each node's set is
// checked on its own; give every store of a deployment its own remainder.
//
// Not thread-safe, like every store: SegmentAllocator calls it from one
// thread at a time.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "snowid/ext/segment_store.h"

namespace snowid {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kFirstBackoff{250};
constexpr milliseconds kMaxBackoff{30'000};

struct Member {
  std::unique_ptr<SegmentStore> store;
  std::optional<TicketIdentity> identity;  // read and checked
  std::optional<Error> refusal;            // the identity disagrees: never used
  SteadyClock::time_point retry_at{};      // skipped until then after a failure
  milliseconds backoff{0};
};

class TicketSegmentStore final : public SegmentStore {
 public:
  explicit TicketSegmentStore(std::vector<std::unique_ptr<SegmentStore>> stores) {
    for (auto& store : stores) {
      Member& member = members_.emplace_back();
      member.store = std::move(store);
    }
  }

  const char* kind() const override { return "tickets"; }
  // Every member's increment is at least 2 (check): numbers step by it.
  bool dense_ranges() const override { return false; }

  // Checks every member that answers; a refusal (kInvalidArgument) stops the start.
  Status check_at_start() {
    for (std::size_t k = 0; k < members_.size(); ++k) {
      if (check(k).ok()) continue;
      if (members_[k].refusal) return *members_[k].refusal;
    }
    return {};
  }

  Status ping() override {
    std::optional<Error> last;
    for (std::size_t k = 0; k < members_.size(); ++k) {
      Status answered = usable(k);
      if (answered.ok()) answered = noted(k, members_[k].store->ping());
      if (answered.ok()) return {};
      last = answered.error();
    }
    return unavailable_all(*last);
  }

  // Creates the tag in every member that answers: a tag must be served by
  // whichever store answers later.
  Status create_tag(std::string_view tag, std::int64_t start, std::int64_t step,
                    std::string_view description) override {
    Result<Tally> tally = call_each(ErrorCode::kAlreadyExists, [&](SegmentStore& store) {
      return store.create_tag(tag, start, step, description);
    });
    if (!tally.ok()) return tally.error();
    if (tally->succeeded) return {};
    if (tally->expected) {
      return Error{ErrorCode::kAlreadyExists, fmt::format("segment tag '{}' already exists", tag)};
    }
    return unavailable_all(*tally->failure);
  }

  // The union over the members that answer; for a tag in several, the row
  // with the highest max_id.
  Result<std::vector<SegmentTagRecord>> list_tags(std::size_t max_rows) override {
    std::vector<SegmentTagRecord> merged;
    std::optional<Error> failure;
    bool answered = false;
    for (std::size_t k = 0; k < members_.size(); ++k) {
      Status usable_now = usable(k);
      Result<std::vector<SegmentTagRecord>> rows =
          usable_now.ok() ? members_[k].store->list_tags(max_rows) : usable_now.error();
      if (!rows.ok()) {
        note(k, rows.error());
        failure = rows.error();
        continue;
      }
      note(k, Status{});
      answered = true;
      for (SegmentTagRecord& row : *rows) {
        auto same = std::find_if(merged.begin(), merged.end(),
                                 [&](const SegmentTagRecord& r) { return r.tag == row.tag; });
        if (same == merged.end()) {
          merged.push_back(std::move(row));
        } else if (row.max_id > same->max_id) {
          *same = std::move(row);
        }
      }
    }
    if (!answered) return unavailable_all(*failure);
    std::sort(merged.begin(), merged.end(),
              [](const SegmentTagRecord& a, const SegmentTagRecord& b) { return a.tag < b.tag; });
    if (merged.size() > max_rows) merged.resize(max_rows);
    return merged;
  }

  Status set_step(std::string_view tag, std::int64_t step) override {
    Result<Tally> tally = call_each(ErrorCode::kNotFound,
                                    [&](SegmentStore& store) { return store.set_step(tag, step); });
    if (!tally.ok()) return tally.error();
    if (tally->succeeded) return {};
    const Error unknown{ErrorCode::kNotFound, "unknown segment tag"};
    if (tally->expected && !tally->failure) return unknown;
    return unavailable_all(tally->failure.value_or(unknown));
  }

  // From the members in turn, as Flickr's ticket servers share the load;
  // one that fails is passed over for the next. A tag unknown to one member
  // may be known to another (created while that one was down).
  Result<SegmentRange> take_range(std::string_view tag,
                                  std::optional<std::int64_t> increment) override {
    std::optional<Error> not_found, failure;
    const std::size_t first = next_turn_;
    next_turn_ = (next_turn_ + 1) % members_.size();
    for (std::size_t i = 0; i < members_.size(); ++i) {
      const std::size_t k = (first + i) % members_.size();
      Result<SegmentRange> range = take_from(k, tag, increment);
      if (range.ok()) return range;
      if (range.error().code == ErrorCode::kNotFound) {
        not_found = range.error();
      } else if (range.error().code == ErrorCode::kInvalidArgument && !members_[k].refusal) {
        return range.error();  // bad input, for every member (a refused member
                               // is passed over)
      } else {
        failure = range.error();
      }
    }
    if (failure) return unavailable_all(*failure);
    return *not_found;
  }

  Result<std::int64_t> max_id(std::string_view tag, std::size_t source) override {
    if (source >= members_.size()) return invalid_argument("no such ticket server");
    if (Status ready = usable(source); !ready.ok()) return ready.error();
    return noted_result(source, members_[source].store->max_id(tag, 0));
  }

  std::vector<std::string> refusals() const override {
    std::vector<std::string> out;
    for (const Member& member : members_) {
      if (member.refusal) out.push_back(member.refusal->message);
    }
    return out;
  }

 private:
  Result<std::int64_t> noted_result(std::size_t k, Result<std::int64_t> result) {
    note(k, result.ok() ? Status{} : Status{result.error()});
    return result;
  }

  // The range of member k, cut to its residue class. A raw range too short
  // to hold a number of the class is followed by one of `increment` numbers,
  // which always holds one.
  Result<SegmentRange> take_from(std::size_t k, std::string_view tag,
                                 std::optional<std::int64_t> increment) {
    if (Status ready = usable(k); !ready.ok()) return ready.error();
    const TicketIdentity identity = *members_[k].identity;
    for (int attempt = 0; attempt < 2; ++attempt) {
      Result<SegmentRange> raw = members_[k].store->take_range(tag, increment);
      if (!raw.ok()) {
        note(k, raw.error());
        return raw.error();
      }
      note(k, Status{});
      const std::int64_t shift =
          ((identity.remainder - raw->first % identity.increment) + identity.increment) %
          identity.increment;
      if (raw->end - raw->first > shift) {
        return SegmentRange{raw->first + shift, raw->end, raw->configured_step, identity.increment,
                            k};
      }
      increment = identity.increment;
    }
    return Error{ErrorCode::kUnavailable, "segment store returned ranges without a ticket number"};
  }

  // What one call made on every member that may be called now came to.
  struct Tally {
    bool succeeded = false;        // some member did it
    bool expected = false;         // some member answered the expected refusal
    std::optional<Error> failure;  // the last other failure
  };

  // Calls `call(store)` on every usable member, noting whether each
  // answered. kInvalidArgument from any member ends it: the input is bad
  // for all of them.
  template <typename Call>
  Result<Tally> call_each(ErrorCode expected_refusal, Call call) {
    Tally tally;
    for (std::size_t k = 0; k < members_.size(); ++k) {
      Status done = usable(k);
      if (done.ok()) done = noted(k, call(*members_[k].store));
      if (done.ok()) {
        tally.succeeded = true;
      } else if (done.error().code == expected_refusal) {
        tally.expected = true;
      } else if (done.error().code == ErrorCode::kInvalidArgument) {
        return done.error();
      } else {
        tally.failure = done.error();
      }
    }
    return tally;
  }

  // OK if member k may be called now: its identity is checked (read now if
  // not yet) and it is not backing off after a failure. Backing off is
  // ignored when every member is, so that a recovered set is noticed at once.
  Status usable(std::size_t k) {
    Member& member = members_[k];
    // Refused at run time: skipped like a store that is down, with the reason.
    if (member.refusal) return Error{ErrorCode::kUnavailable, member.refusal->message};
    const bool all_backing_off =
        std::all_of(members_.begin(), members_.end(),
                    [now = SteadyClock::now()](const Member& m) { return m.retry_at > now; });
    if (member.retry_at > SteadyClock::now() && !all_backing_off) {
      return Error{ErrorCode::kUnavailable, fmt::format("ticket server {} is backing off after a "
                                                        "failure",
                                                        k + 1)};
    }
    return check(k);
  }

  Status check(std::size_t k) {
    Member& member = members_[k];
    if (member.identity) return {};
    Result<TicketIdentity> identity = member.store->ticket_identity();
    if (!identity.ok()) return noted(k, identity.error());
    note(k, Status{});
    std::optional<std::string> disagreement;
    if (identity->increment < 2) {
      disagreement = "has no ticket identity (record one with `snowid segment ticket-init`)";
    } else if (static_cast<std::int64_t>(members_.size()) > identity->increment) {
      disagreement = fmt::format("has increment {}, fewer than the {} stores listed",
                                 identity->increment, members_.size());
    }
    for (std::size_t j = 0; !disagreement && j < members_.size(); ++j) {
      const std::optional<TicketIdentity>& other = members_[j].identity;
      if (j == k || !other) continue;
      if (other->increment != identity->increment) {
        disagreement = fmt::format("has increment {}, ticket server {} has {}", identity->increment,
                                   j + 1, other->increment);
      } else if (other->remainder == identity->remainder) {
        disagreement = fmt::format(
            "has remainder {} (the numbers n % {} == {}), as ticket server {} has: they "
            "would hand out the same numbers",
            identity->remainder, identity->increment, identity->remainder, j + 1);
      }
    }
    if (disagreement) {
      member.refusal = Error{ErrorCode::kInvalidArgument,
                             fmt::format("segment store {} of the ticket-server set {}; it is "
                                         "never used",
                                         k + 1, *disagreement)};
      return *member.refusal;
    }
    member.identity = *identity;
    return {};
  }

  Status noted(std::size_t k, Status result) {
    note(k, result);
    return result;
  }

  // Records whether member k answered: a failure to reach it starts or
  // doubles its backoff, an answer ends it.
  void note(std::size_t k, const Status& result) {
    Member& member = members_[k];
    if (result.ok() || result.error().code != ErrorCode::kUnavailable) {
      member.backoff = milliseconds{0};
      member.retry_at = {};
    } else {
      member.backoff = std::clamp(member.backoff * 2, kFirstBackoff, kMaxBackoff);
      member.retry_at = SteadyClock::now() + member.backoff;
    }
  }

  Error unavailable_all(const Error& last) const {
    if (last.code != ErrorCode::kUnavailable) return last;
    return Error{ErrorCode::kUnavailable, fmt::format("no ticket server of {} answers; last: {}",
                                                      members_.size(), last.message)};
  }

  std::vector<Member> members_;
  std::size_t next_turn_ = 0;  // the member asked first by the next take_range
};

}  // namespace

Result<std::unique_ptr<SegmentStore>> open_ticket_store(
    std::vector<std::unique_ptr<SegmentStore>> members) {
  if (members.size() < 2) {
    return invalid_argument("a ticket-server set needs at least 2 stores");
  }
  if (static_cast<std::int64_t>(members.size()) > kMaxTicketIncrement) {
    return invalid_argument(
        fmt::format("a ticket-server set has at most {} stores", kMaxTicketIncrement));
  }
  auto set = std::make_unique<TicketSegmentStore>(std::move(members));
  if (Status checked = set->check_at_start(); !checked.ok()) return checked.error();
  return std::unique_ptr<SegmentStore>(std::move(set));
}

}  // namespace snowid
