#include "snowid/error.h"

namespace snowid {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kClockBehind: return "clock_behind";
    case ErrorCode::kClockBeforeEpoch: return "clock_before_epoch";
    case ErrorCode::kTimestampOverflow: return "timestamp_overflow";
    case ErrorCode::kStateFile: return "state_file";
    case ErrorCode::kStateLocked: return "state_locked";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kAlreadyExists: return "already_exists";
    case ErrorCode::kFailedPrecondition: return "failed_precondition";
  }
  return "unknown";
}

}  // namespace snowid
