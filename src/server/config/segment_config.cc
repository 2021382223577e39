#include "segment_config.h"

#include "snowid/ext/segment_store.h"

namespace snowid::server {

OptionRows<SegmentConfig> segment_rows() {
  using S = SegmentConfig;
  using option::shown;
  const auto segments = [](const S& c) -> std::string {
    return c.store != kSegmentStoreOff ? "" : "segment mode (segment_store not \"off\")";
  };
  return {
      {"segment_auto_create", option::boolean(&S::auto_create), shown(&S::auto_create), segments},
      {"segment_auto_create_step",
       option::bounded(&S::auto_create_step, kMinSegmentStep, kMaxSegmentStep),
       shown(&S::auto_create_step), segments},
      {"segment_prefetch_at", option::fraction(&S::prefetch_at),
       [](const S& c) { return fmt::format("{}", c.prefetch_at); }, segments},
      {"segment_max_step", option::bounded(&S::max_step, kMinSegmentStep, kMaxSegmentStep),
       shown(&S::max_step), segments},
      {"segment_request_timeout_ms", option::positive_duration(&S::request_timeout),
       shown(&S::request_timeout), segments},
      {"segment_store_timeout_ms", option::positive_duration(&S::store_timeout),
       shown(&S::store_timeout), segments},
      {"segment_retry_max_ms", option::positive_duration(&S::retry_max), shown(&S::retry_max),
       segments},
      {"tag_audit_log", option::text(&S::tag_audit_log), shown(&S::tag_audit_log), segments},
      {"business_width_warning", option::fraction(&S::business_width_warning),
       [](const S& c) { return fmt::format("{}", c.business_width_warning); }, segments},
      {"tag_refresh_ms", option::positive_duration(&S::tag_refresh), shown(&S::tag_refresh),
       segments},
  };
}

}  // namespace snowid::server
