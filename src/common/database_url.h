// Reading the authority of a database URL,
// scheme://[user[:password]@]host[:port][/database][?parameters], the way
// libpq and the MySQL store read it. The one place that knows where a store
// URL's user info, password and host are; header-only, no state, safe from any
// thread.
//
// The authority starts after "://" and ends at the first '/' only, so a '?'
// or '#' before the '@' belongs to the password ("user:pa?ss@host"). The user
// info with its password ends at the last '@' of the authority; libpq ends
// the user info at the first '@', so the host, as libpq reads it, starts after
// that one.
#pragma once

#include <cstddef>
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "percent_decode.h"

namespace snowid {

// True if `url` holds a control character (NUL, tab, newline, DEL ...). No
// store URL may: a tab between two URLs would make them one, whose
// "database" then shows the second one's password, and a NUL would cut the
// value the database client is given.
inline bool has_control_character(std::string_view url) {
  for (const char c : url) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// Offsets into the URL that was read. npos stands for "none".
struct DatabaseUrlAuthority {
  static constexpr std::size_t npos = std::string_view::npos;

  std::size_t begin = 0;          // just after "://"
  std::size_t end = 0;            // the first '/' after begin, or the URL's size if none
  std::size_t path_slash = npos;  // the '/' that ends the authority, or npos if none
  std::size_t first_at = npos;    // the first '@' in [begin, end), or npos
  std::size_t last_at = npos;     // the last '@' in [begin, end): where the user info ends

  bool has_user_info() const { return last_at != npos; }
  bool has_path() const { return path_slash != npos; }
  // Where the host starts as libpq reads it: after the first '@', if any.
  std::size_t libpq_host() const { return first_at == npos ? begin : first_at + 1; }
};

// The authority of `url`; nullopt if `url` has no "://".
inline std::optional<DatabaseUrlAuthority> database_url_authority(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  DatabaseUrlAuthority a;
  a.begin = scheme_end + 3;
  a.path_slash = url.find('/', a.begin);
  a.end = a.path_slash == std::string_view::npos ? url.size() : a.path_slash;
  const std::string_view authority = url.substr(a.begin, a.end - a.begin);
  if (const std::size_t at = authority.find('@'); at != std::string_view::npos) {
    a.first_at = a.begin + at;
    a.last_at = a.begin + authority.rfind('@');
  }
  return a;
}

// `url` with its secrets replaced by "***": the password of its user info,
// and the value of every query parameter whose name, percent-decoded, ends
// in "password" (password, sslpassword, pass%77ord: libpq decodes names).
// libpq ends the authority at the first '/' only, so a '?' or '#' before the
// '@' is part of the password ("user:pa?ss@host"), not a query or fragment.
inline std::string hide_url_passwords(std::string_view url) {
  std::string out(url);
  if (const auto parts = database_url_authority(out); parts && parts->has_user_info()) {
    const auto colon = out.find(':', parts->begin);
    if (colon < parts->last_at) out.replace(colon + 1, parts->last_at - colon - 1, "***");
  }
  std::size_t host = 0;  // where the host starts, after any user info
  if (const auto parts = database_url_authority(out)) host = parts->libpq_host();
  const auto query = out.find('?', host);
  for (auto pos = query; pos != std::string::npos && pos < out.size();) {
    const auto start = pos + 1;
    const auto end = std::min(out.find('&', start), out.size());
    const auto equals = out.find('=', start);
    if (equals < end && percent_decode_lenient(std::string_view(out).substr(start, equals - start))
                            .ends_with("password")) {
      out.replace(equals + 1, end - equals - 1, "***");
    }
    pos = out.find('&', start);
  }
  return out;
}

}  // namespace snowid
