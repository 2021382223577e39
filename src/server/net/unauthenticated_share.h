// Which connections not yet authenticated hold a stream listener's share of
// its slots (stream_server.h), and which one of them makes room for a new
// one, so that a stream of connections that never authenticate cannot keep
// out a client that authenticates in its first request.
//
// A new connection takes a slot if one is free. If none is, it displaces a
// member whose standing is no better than its own, and is refused only if
// there is none. Standings, worst first:
//   kSpent           its first request is not one that authenticates (seen
//                    in the bytes waiting when it was admitted), or was
//                    answered and it is still not authenticated: it had its
//                    chance;
//   kSilent          its first request had not arrived whole when it was
//                    admitted or last looked at, nor been read since;
//   kAuthenticating  its first request, waiting when it was admitted and not
//                    read yet, is one that authenticates (AUTH, Thrift's
//                    authenticate): a client that sends it at once, as
//                    client libraries do.
// Of the members a newcomer may displace, the oldest of the worst standing
// goes (a silent one is looked at again first, and judged by its first
// request if that has arrived): among connections that send nothing, the
// oldest is closed first, and only a newcomer that authenticates at once
// displaces one that does.
//
// One source address holds at most half the share (rounded up, at least 1):
// a newcomer from a source at that bound displaces a member of the same
// source, never another's, so one address alone cannot hold the whole share.
// (Clients behind one proxy, or all on one machine, share an address and
// that half.)
//
// A share lowered below the members it holds (set_connection_limit) shrinks
// by one member per newcomer; the others leave at their auth timeout.
//
// Thread-safe: the acceptor admits, the connection threads report.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace snowid::server {

class UnauthenticatedShare {
 public:
  enum class Standing { kSpent = 0, kSilent = 1, kAuthenticating = 2 };
  class Member;
  using Handle = std::shared_ptr<Member>;

  struct Admission {
    Handle member;  // null: refused, no member could be displaced
    // The displaced member's `evict` (given to admit()), for the caller to
    // run once the lock is released; empty if none was displaced.
    std::function<void()> evict;
  };
  // Takes a slot of `slots` for a new connection from `source` (an address
  // as text) with `standing`, displacing a member if none is free. `evict`
  // closes this new member if it is displaced later. `look`, if given, says
  // what the member's standing is now, from what waits on its connection
  // unread; it is called under the share's lock while the member is held
  // (so the caller can keep the connection open until it leaves), before a
  // silent member is displaced: one whose first request arrived since is
  // judged by it instead.
  Admission admit(const std::string& source, Standing standing, std::int64_t slots,
                  std::function<void()> evict, std::function<Standing()> look = nullptr);
  // The member's first request was read and answered, and it is still not
  // authenticated: it becomes kSpent. Once a member left, does nothing.
  void spent(const Handle& member);
  // The member authenticated or closed: its slot is free. Idempotent.
  void leave(const Handle& member);
  // Whether a newcomer from `source` would have to displace a member to
  // take one of `slots`.
  bool full(const std::string& source, std::int64_t slots) const;
  // Members holding a slot now.
  std::int64_t size() const;

 private:
  using Members = std::array<std::list<Handle>, 3>;  // by standing, oldest first
  struct Source {
    Members members;
    std::int64_t count = 0;
  };
  // The bound on one source's members, of `slots`.
  static std::int64_t per_source(std::int64_t slots) {
    return std::max<std::int64_t>(1, (slots + 1) / 2);
  }
  // The oldest member of `members` of the worst standing a `standing`
  // newcomer may displace, silent ones looked at again; null if none.
  Handle displaceable_locked(const Members& members, Standing standing);
  // Moves a held member to the end of `standing`'s lists.
  void restand_locked(const Handle& member, Standing standing);
  void insert_locked(const Handle& member);
  // By value: the lists may hold the last references to the member.
  void remove_locked(Handle member);

  mutable std::mutex mutex_;
  Members all_;
  std::unordered_map<std::string, Source> sources_;
  std::int64_t size_ = 0;
};

}  // namespace snowid::server
