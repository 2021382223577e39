// An operator's view of a generator's persisted high-water mark
// (GeneratorOptions::state_file), for `snowid state`: what the mark is and
// who holds it, and the one repair that keeps the promise, lowering it to a
// time that the operator has proven to be above every ID issued (for example
// from snowidd's audit log).
//
// Thread-safety: free functions, safe from any thread; lower_mark() takes the
// state file's lock, so it fails while a generator uses the file.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

struct MarkInspection {
  std::filesystem::path path;                     // the file read (a symbolic link followed)
  std::optional<std::chrono::milliseconds> mark;  // Unix ms; nullopt: nothing at the path
  std::optional<std::string> holder;              // pid of a process using it, if one does
};

// Reads the mark without taking the lock (a running generator may hold it).
// Errors as Generator::create would give them (damaged file, other layout,
// dangling symbolic link).
Result<MarkInspection> inspect_mark(const std::filesystem::path& state_file, const Layout& layout);

// Replaces the mark by `mark`, which must be below it. Requires that no ID
// of this node lies in a time unit starting after `mark`: the caller's
// proof, since a generator started afterwards begins right above it.
// kStateLocked while a process uses the file; kInvalidArgument if `mark` is
// not below the current mark or there is none.
Status lower_mark(const std::filesystem::path& state_file, const Layout& layout,
                  std::chrono::milliseconds mark);

}  // namespace snowid
