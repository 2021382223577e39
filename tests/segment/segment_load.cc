// A test load: one SegmentAllocator process that prints the numbers of one
// tag, one per line, so that tests can kill it (kill -9), restart it and run
// several at once, then check the union for repeats.
//
//   segment_load STORE_URL TAG COUNT BATCH MAX_STEP
//
// COUNT 0 runs until killed. Each batch is written with one write() after it
// was issued, so a line in the output is a number that was handed out.
// Exit: 0 done, 1 the allocator failed, 2 bad arguments.
#include <chrono>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "snowid/ext/segment.h"

namespace {

long long parse(const char* text) {
  long long value = -1;
  const std::string_view view(text);
  std::from_chars(view.data(), view.data() + view.size(), value);
  return value;
}

bool write_all(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: segment_load STORE_URL TAG COUNT BATCH MAX_STEP\n");
    return 2;
  }
  const long long count = parse(argv[3]), batch = parse(argv[4]), max_step = parse(argv[5]);
  if (count < 0 || batch < 1 || max_step < 1) {
    std::fprintf(stderr, "segment_load: bad COUNT, BATCH or MAX_STEP\n");
    return 2;
  }
  snowid::SegmentAllocatorOptions options;
  options.max_step = max_step;
  // What these runs test is that no number is shared; on a loaded machine a
  // store shared by two processes may take longer than the 2 s default.
  options.request_timeout = std::chrono::milliseconds{10000};
  auto allocator = snowid::SegmentAllocator::open(argv[1], options);
  if (!allocator.ok()) {
    std::fprintf(stderr, "segment_load: %s\n", allocator.error().message.c_str());
    return 1;
  }
  std::vector<std::int64_t> numbers;
  std::string text;
  for (long long done = 0; count == 0 || done < count;) {
    const long long want = count == 0 ? batch : std::min(batch, count - done);
    numbers.clear();
    snowid::Status taken = (*allocator)->next(argv[2], static_cast<std::size_t>(want), numbers);
    if (!taken.ok()) {
      std::fprintf(stderr, "segment_load: %s\n", taken.error().message.c_str());
      return 1;
    }
    text.clear();
    for (std::int64_t number : numbers) (text += std::to_string(number)) += '\n';
    if (!write_all(text)) return 1;
    done += want;
  }
  return 0;
}
