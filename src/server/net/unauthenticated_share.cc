#include "unauthenticated_share.h"

#include <utility>

namespace snowid::server {

// Invariants, under mutex_: a member is in all_[standing] and in
// sources_[source].members[standing] exactly while `held`; each Source's
// count is the number of its members held, and a Source with none is erased;
// size_ is the number of members held.
class UnauthenticatedShare::Member {
 public:
  Member(std::string from, Standing initial, std::function<void()> on_evict,
         std::function<Standing()> on_look)
      : source(std::move(from)),
        standing(initial),
        evict(std::move(on_evict)),
        look(std::move(on_look)) {}

  const std::string source;
  Standing standing;
  const std::function<void()> evict;
  const std::function<Standing()> look;  // may be empty
  bool held = false;
  std::list<Handle>::iterator in_all;
  std::list<Handle>::iterator in_source;
};

UnauthenticatedShare::Admission UnauthenticatedShare::admit(const std::string& source,
                                                            Standing standing, std::int64_t slots,
                                                            std::function<void()> evict,
                                                            std::function<Standing()> look) {
  std::lock_guard lock(mutex_);
  Handle displaced;
  const auto found = sources_.find(source);
  if (found != sources_.end() && found->second.count >= per_source(slots)) {
    displaced = displaceable_locked(found->second.members, standing);
    if (!displaced) return {};
  } else if (size_ >= slots) {
    displaced = displaceable_locked(all_, standing);
    if (!displaced) return {};
  }
  Admission admission;
  if (displaced) {
    remove_locked(displaced);
    admission.evict = displaced->evict;
  }
  admission.member = std::make_shared<Member>(source, standing, std::move(evict), std::move(look));
  insert_locked(admission.member);
  return admission;
}

void UnauthenticatedShare::spent(const Handle& member) {
  std::lock_guard lock(mutex_);
  if (member->held) restand_locked(member, Standing::kSpent);
}

void UnauthenticatedShare::leave(const Handle& member) {
  std::lock_guard lock(mutex_);
  if (member->held) remove_locked(member);
}

bool UnauthenticatedShare::full(const std::string& source, std::int64_t slots) const {
  std::lock_guard lock(mutex_);
  const auto found = sources_.find(source);
  return size_ >= slots || (found != sources_.end() && found->second.count >= per_source(slots));
}

std::int64_t UnauthenticatedShare::size() const {
  std::lock_guard lock(mutex_);
  return size_;
}

UnauthenticatedShare::Handle UnauthenticatedShare::displaceable_locked(const Members& members,
                                                                       Standing standing) {
  // Each pass either returns or moves a silent member out of kSilent for
  // good: at most as many passes as there are silent members, plus one.
  for (;;) {
    Handle worst;
    for (std::size_t at = 0; at <= static_cast<std::size_t>(standing) && !worst; ++at) {
      if (!members[at].empty()) worst = members[at].front();
    }
    if (!worst || worst->standing != Standing::kSilent || !worst->look) return worst;
    const Standing now = worst->look();
    if (now == Standing::kSilent) return worst;
    restand_locked(worst, now);
  }
}

void UnauthenticatedShare::restand_locked(const Handle& member, Standing standing) {
  if (member->standing == standing) return;
  const auto from = static_cast<std::size_t>(member->standing);
  const auto to = static_cast<std::size_t>(standing);
  // Spliced: the iterators stay valid and no count changes.
  Members& source = sources_.find(member->source)->second.members;
  all_[to].splice(all_[to].end(), all_[from], member->in_all);
  source[to].splice(source[to].end(), source[from], member->in_source);
  member->standing = standing;
}

void UnauthenticatedShare::insert_locked(const Handle& member) {
  const auto index = static_cast<std::size_t>(member->standing);
  Source& source = sources_[member->source];
  member->in_all = all_[index].insert(all_[index].end(), member);
  member->in_source = source.members[index].insert(source.members[index].end(), member);
  member->held = true;
  ++source.count;
  ++size_;
}

void UnauthenticatedShare::remove_locked(Handle member) {
  const auto index = static_cast<std::size_t>(member->standing);
  const auto source = sources_.find(member->source);
  source->second.members[index].erase(member->in_source);
  if (--source->second.count == 0) sources_.erase(source);
  all_[index].erase(member->in_all);
  member->held = false;
  --size_;
}

}  // namespace snowid::server
