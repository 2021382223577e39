// IdService's business IDs and tag administration (service.h), on the
// node's TagBook (tags/tag_book.h).
#include <fmt/format.h>

#include <iterator>

#include "prometheus_text.h"

#include "service.h"

namespace snowid::server {
namespace {

// Tags a list returns at most (as /db shows).
constexpr std::size_t kMaxTagsListed = kMaxSegmentTagsExported;

Answer tag_refusal(const Error& error) {
  switch (error.code) {
    case ErrorCode::kInvalidArgument:
      return {Outcome::kInvalidArgument, error.message};
    case ErrorCode::kNotFound:
      return {Outcome::kNotFound, error.message};
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kFailedPrecondition:
      return {Outcome::kConflict, error.message};
    case ErrorCode::kUnavailable:
      return {Outcome::kUnavailable, error.message};
    default:
      return {Outcome::kInternal, error.message};
  }
}

template <typename T>
Answer settle(Result<T> result, T& out) {
  if (!result.ok()) return tag_refusal(result.error());
  out = std::move(*result);
  return {};
}

}  // namespace

std::string IdService::business_metrics() const {
  std::vector<tags::BusinessTagStats> stats = tag_book_->stats();
  if (stats.size() > kMaxSegmentTagsExported) stats.resize(kMaxSegmentTagsExported);
  std::string out;
  auto sink = std::back_inserter(out);
  // One family: its HELP and TYPE, then `sample(tag's label, stats)` per tag.
  const auto family = [&](std::string_view name, std::string_view type, std::string_view help,
                           const auto& sample) {
    fmt::format_to(sink, "# HELP {0} {1}\n# TYPE {0} {2}\n", name, help, type);
    for (const auto& tag : stats) sample(prometheus_label_value(tag.tag), tag);
  };
  family("snowid_business_ids_total", "counter", "Business IDs handed out, by tag.",
         [&](const std::string& tag, const tags::BusinessTagStats& s) {
           fmt::format_to(sink, "snowid_business_ids_total{{tag=\"{}\"}} {}\n", tag, s.issued);
         });
  family("snowid_business_refused_total", "counter",
         "Business ID requests refused, by tag and reason (width: the period's numbers outgrew "
         "the template's width; clock: the node's and the store's clocks disagree about the "
         "period).",
         [&](const std::string& tag, const tags::BusinessTagStats& s) {
           for (const auto& [reason, count] :
                {std::pair{"width", s.refused_width}, std::pair{"clock", s.refused_clock}}) {
             fmt::format_to(sink, "snowid_business_refused_total{{tag=\"{}\",reason=\"{}\"}} {}\n",
                            tag, reason, count);
           }
         });
  family("snowid_business_width_used_ratio", "gauge",
         "The highest number taken in the current period over the largest the template's width "
         "holds.",
         [&](const std::string& tag, const tags::BusinessTagStats& s) {
           fmt::format_to(sink, "snowid_business_width_used_ratio{{tag=\"{}\"}} {:.6f}\n", tag,
                          s.width_used);
         });
  family("snowid_business_width_warning", "gauge",
         "1 while the current period has passed business_width_warning of its width.",
         [&](const std::string& tag, const tags::BusinessTagStats& s) {
           fmt::format_to(sink, "snowid_business_width_warning{{tag=\"{}\"}} {}\n", tag,
                          s.width_warning ? 1 : 0);
         });
  return out;
}

Answer IdService::check_tag_book() const {
  if (Answer on = check_segment_mode(); !on.ok()) return on;
  if (tag_book_ == nullptr) {
    return {Outcome::kDisabled,
            fmt::format("tag settings are off on this node: {}", tag_book_missing_)};
  }
  return {};
}

Answer IdService::admit(const BusinessRequest& request) const {
  if (Answer allowed = authorize(request.caller, TokenScope::segment_tag(request.tag));
      !allowed.ok()) {
    return allowed;
  }
  if (Answer agent = check_agent(request.agent); !agent.ok()) return agent;
  if (Answer on = check_tag_book(); !on.ok()) return on;
  if (Answer tag = check_tag(request.tag); !tag.ok()) return tag;
  return check_count(request.count);
}

Answer IdService::next_business_ids(const BusinessRequest& request,
                                    std::vector<std::string>& out) {
  if (Answer admitted = admit(request); !admitted.ok()) return admitted;
  Status issued = tag_book_->next(request.tag, static_cast<std::size_t>(request.count), out);
  if (!issued.ok()) return tag_refusal(issued.error());
  return {};
}

Answer IdService::create_tag(const Caller& caller, const tags::TagCreation& creation,
                             tags::TagView& out) {
  std::string who;
  if (Answer allowed = authorize(caller, TokenScope::admin(), &who); !allowed.ok()) return allowed;
  if (Answer on = check_tag_book(); !on.ok()) return on;
  return settle(tag_book_->create(creation, who), out);
}

Answer IdService::list_tags(const Caller& caller, std::vector<tags::TagView>& out) {
  if (Answer allowed = authorize(caller, TokenScope::admin()); !allowed.ok()) return allowed;
  if (Answer on = check_tag_book(); !on.ok()) return on;
  return settle(tag_book_->list(kMaxTagsListed), out);
}

Answer IdService::show_tag(const Caller& caller, std::string_view tag, tags::TagView& out) {
  if (Answer allowed = authorize(caller, TokenScope::admin()); !allowed.ok()) return allowed;
  if (Answer on = check_tag_book(); !on.ok()) return on;
  if (Answer valid = check_tag(tag); !valid.ok()) return valid;
  return settle(tag_book_->show(tag), out);
}

Answer IdService::change_tag(const Caller& caller, std::string_view tag,
                             const tags::TagChange& change, tags::TagView& out) {
  std::string who;
  if (Answer allowed = authorize(caller, TokenScope::admin(), &who); !allowed.ok()) return allowed;
  if (Answer on = check_tag_book(); !on.ok()) return on;
  if (Answer valid = check_tag(tag); !valid.ok()) return valid;
  return settle(tag_book_->change(tag, change, who), out);
}

Answer IdService::retire_tag(const Caller& caller, std::string_view tag, tags::TagView& out) {
  std::string who;
  if (Answer allowed = authorize(caller, TokenScope::admin(), &who); !allowed.ok()) return allowed;
  if (Answer on = check_tag_book(); !on.ok()) return on;
  if (Answer valid = check_tag(tag); !valid.ok()) return valid;
  return settle(tag_book_->retire(tag, who), out);
}

}  // namespace snowid::server
