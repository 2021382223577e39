// snowid reports failures as values, never as exceptions across the API.
//
// An Error carries a code a program can branch on and a message a person can
// act on ("clock moved back 12 ms; the reject policy refuses..."). Result<T>
// holds either a T or an Error. Both are plain values: safe to copy and to
// pass between threads.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace snowid {

enum class ErrorCode {
  kInvalidArgument,     // bad input: layout, id, field value, option
  kClockBehind,         // the clock is behind the last issued (or persisted) timestamp
  kClockBeforeEpoch,    // the clock reads earlier than the layout's epoch
  kTimestampOverflow,   // the timestamp no longer fits the layout's timestamp field
  kStateFile,           // the state file cannot be read, parsed or written
  kStateLocked,         // another process holds the state file
  kUnavailable,         // no ID can be issued right now for another reason
  kNotFound,            // the named thing (e.g. a segment tag) does not exist
  kAlreadyExists,       // the named thing (e.g. a segment tag) exists already
  kFailedPrecondition,  // the named thing's state refuses the call (a retired tag, a change
                        // that would repeat numbers, a period's numbers past their width)
};

// Short stable name of a code, e.g. "clock_behind".
const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code;
  std::string message;
};

// Either a value or an Error. Check ok() before value().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}           // NOLINT: implicit by design
  Result(Error error) : data_(std::move(error)) {}       // NOLINT: implicit by design

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(data_); }
  const T& value() const& { assert(ok()); return std::get<0>(data_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(data_)); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(data_); }

 private:
  std::variant<T, Error> data_;
};

// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return error_; }

 private:
  Error error_{ErrorCode::kInvalidArgument, {}};
  bool ok_ = true;
};

inline Error invalid_argument(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message)};
}

}  // namespace snowid
