// Build-time generator of option_help.h: snowidd --help's type and one-line
// meaning of every option, taken from snowid.example.toml, the manual, so
// that the two never disagree.
//
//   snowid_option_help_gen snowid.example.toml option_help.h
//
// An option is a line `name = value`, or `# name = value` for one shown
// commented out (a layout field the preset decides). Its meaning is the
// comment at the end of its line if it has one, else the first sentence of
// the comment lines right above it (a sentence ends at a '.' or at a ':' that
// ends a line). Its type follows from the value (a count, true/false, a
// fraction, text) and the name (`_ms`, `_s`, `_bytes`, `_file`, ...), or from
// the words ADDR:PORT or HOST:PORT in its comment. Exits 1, naming the line,
// if an option has no comment of its own: every option is documented.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Help {
  std::string name;
  std::string type;
  std::string meaning;
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The first sentence of `lines` (comment lines joined by '\n'), on one
// line: up to the first '.' followed by a space or a line's end (not "...",
// "e.g.", "i.e."), or the first ':' that ends a line.
std::string first_sentence(const std::string& lines) {
  std::size_t end = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const bool at_break = i + 1 == lines.size() || lines[i + 1] == '\n';
    if (lines[i] == ':' && at_break) {
      end = i + 1;
      break;
    }
    if (lines[i] != '.' || !(at_break || lines[i + 1] == ' ')) continue;
    if (i >= 1 && lines[i - 1] == '.') continue;
    if (i >= 3 && (lines.compare(i - 3, 4, "e.g.") == 0 || lines.compare(i - 3, 4, "i.e.") == 0))
      continue;
    end = i + 1;
    break;
  }
  std::string out = lines.substr(0, end);
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return out;
}

std::string type_of(const std::string& name, const std::string& value, const std::string& block) {
  static const std::regex kCount(R"([0-9]+)");
  static const std::regex kFraction(R"([0-9]+\.[0-9]+)");
  if (value == "true" || value == "false") return "BOOLEAN";
  if (std::regex_match(value, kFraction)) return "FRACTION";
  if (std::regex_match(value, kCount)) {
    if (ends_with(name, "_ms")) return "MILLISECONDS";
    if (ends_with(name, "_s")) return "SECONDS";
    if (ends_with(name, "_bytes")) return "BYTES";
    return "COUNT";
  }
  if (ends_with(name, "_file") || ends_with(name, "_cert") || ends_with(name, "_key") ||
      ends_with(name, "_ca") || ends_with(name, "_log")) {
    return "FILE";
  }
  if (ends_with(name, "_dir")) return "DIRECTORY";
  if (block.find("ADDR:PORT") != std::string::npos) return "ADDR:PORT";
  if (block.find("HOST:PORT") != std::string::npos) return "HOST:PORT,...";
  if (ends_with(name, "epoch")) return "TIME";
  return "TEXT";
}

// `text` as a C++ string literal.
std::string literal(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: snowid_option_help_gen EXAMPLE.toml OUTPUT.h\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << argv[1] << ": cannot read\n";
    return 1;
  }
  static const std::regex kOption(R"(^(# )?([a-z_]+) = ("[^"]*"|[^ #"]+) *(# *(.*))?$)");
  static const std::regex kSection(R"(^# ---)");
  std::vector<Help> options;
  std::string block;  // the comment lines since the last blank line or option
  bool undocumented = false;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::smatch m;
    if (std::regex_match(line, m, kOption)) {
      const std::string name = m[2];
      std::string value = m[3];
      if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
      const std::string own = m[5].matched ? std::string(m[5]) : block;
      if (own.empty()) {
        std::cerr << argv[1] << ":" << number << ": option " << name
                  << " has no comment of its own to take its meaning from\n";
        undocumented = true;
      }
      options.push_back({name, type_of(name, value, own), first_sentence(own)});
      block.clear();
      continue;
    }
    if (line.empty()) {
      block.clear();
      continue;
    }
    if (std::regex_search(line, kSection) || line.rfind('#', 0) != 0) {
      block.clear();
      continue;
    }
    std::string text = line.substr(line.size() > 1 && line[1] == ' ' ? 2 : 1);
    if (!block.empty()) block += '\n';
    block += text;
  }
  if (undocumented) return 1;
  std::ostringstream out;
  out << "// Generated from " << argv[1] << " by snowid_option_help_gen: do not edit.\n"
      << "#pragma once\n\n#include <string_view>\n\nnamespace snowid::server {\n\n"
      << "struct OptionHelp {\n  std::string_view name;\n  std::string_view type;\n"
      << "  std::string_view meaning;\n};\n\n"
      << "inline constexpr OptionHelp kOptionHelp[] = {\n";
  for (const Help& h : options) {
    out << "    {" << literal(h.name) << ", " << literal(h.type) << ", " << literal(h.meaning)
        << "},\n";
  }
  out << "};\n\n}  // namespace snowid::server\n";
  std::ofstream file(argv[2], std::ios::trunc);
  file << out.str();
  if (!file.flush()) {
    std::cerr << argv[2] << ": cannot write\n";
    return 1;
  }
  return 0;
}
