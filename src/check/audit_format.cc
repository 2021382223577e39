#include "audit_format.h"

#include <fmt/format.h>

#include <charconv>

#include "time_text.h"

namespace snowid::audit {
namespace {

// Splits off the text before the next space; `rest` keeps what follows it.
std::string_view next_field(std::string_view& rest) {
  const auto space = rest.find(' ');
  const std::string_view field = rest.substr(0, space);
  rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  return field;
}

}  // namespace

std::string excerpt(std::string_view text) {
  constexpr std::size_t kMaxShown = 60;
  return text.size() <= kMaxShown ? std::string(text)
                                  : std::string(text.substr(0, kMaxShown)) + "...";
}

std::string format_incarnation(std::uint64_t incarnation) {
  return fmt::format("{:016x}", incarnation);
}

void append_record(std::string& out, const Record& record) {
  static constexpr char kHex[] = "0123456789abcdef";
  char hex[16];
  for (std::size_t i = 0; i < sizeof hex; ++i) {
    hex[i] = kHex[(record.incarnation >> (60 - 4 * i)) & 0xf];
  }
  out.append(hex, sizeof hex);
  auto number = [&out](auto value, char after) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    out.append(digits, static_cast<std::size_t>(end - digits));
    out += after;
  };
  out += ' ';
  number(record.datacenter, '/');
  number(record.worker, ' ');
  number(record.first, ' ');
  number(record.last, '\n');
}

std::string header(std::uint64_t incarnation, std::chrono::milliseconds started, long pid,
                   std::uint64_t datacenter, std::uint64_t worker, const Layout& layout) {
  return fmt::format("{}incarnation={} started={} pid={} node={}/{} layout={}\n", kHeaderPrefix,
                     format_incarnation(incarnation), format_time(started), pid, datacenter, worker,
                     describe(layout));
}

Result<Record> parse_record(std::string_view line) {
  auto bad = [line](std::string_view what) {
    return invalid_argument(fmt::format(
        "not an audit record ({}; expected '<incarnation> <datacenter>/<worker> <first> "
        "<last>'): '{}'",
        what, excerpt(line)));
  };
  std::string_view rest = line;
  const std::string_view incarnation = next_field(rest);
  const std::string_view node = next_field(rest);
  const std::string_view first = next_field(rest);
  const std::string_view last = next_field(rest);
  if (last.empty() || !rest.empty()) return bad("not four fields separated by one space");
  Record record;
  if (incarnation.size() != 16) return bad("the incarnation is not 16 hex digits");
  auto [hex_end, hex_error] = std::from_chars(
      incarnation.data(), incarnation.data() + incarnation.size(), record.incarnation, 16);
  if (hex_error != std::errc{} || hex_end != incarnation.data() + incarnation.size()) {
    return bad("the incarnation is not 16 hex digits");
  }
  const auto slash = node.find('/');
  if (slash == std::string_view::npos) return bad("the node is not <datacenter>/<worker>");
  auto datacenter = parse_unsigned(node.substr(0, slash), UINT64_MAX, "datacenter");
  auto worker = parse_unsigned(node.substr(slash + 1), UINT64_MAX, "worker");
  if (!datacenter.ok() || !worker.ok()) return bad("the node is not <datacenter>/<worker>");
  record.datacenter = *datacenter;
  record.worker = *worker;
  auto first_id = parse_id(first);
  if (!first_id.ok()) return bad("first ID: " + first_id.error().message);
  auto last_id = parse_id(last);
  if (!last_id.ok()) return bad("last ID: " + last_id.error().message);
  record.first = *first_id;
  record.last = *last_id;
  if (record.last < record.first) return bad("the last ID is below the first");
  return record;
}

std::optional<std::string_view> header_layout(std::string_view line) {
  if (line.substr(0, kHeaderPrefix.size()) != kHeaderPrefix) return std::nullopt;
  constexpr std::string_view kLayout = " layout=";
  const auto at = line.find(kLayout);
  if (at == std::string_view::npos) return std::string_view{};
  return line.substr(at + kLayout.size());
}

}  // namespace snowid::audit
