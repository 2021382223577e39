// mysql:// and mariadb:// URLs read into MariadbOptions (mariadb_connection.h),
// one reader for every store on MariaDB or MySQL:
//
//   mysql://user[:password]@host[:port]/database[?param=value&...]
//
// The connection's own parameters are password_file=PATH (the password, read
// once here; a final newline is not part of it; not with a password in the
// URL) and ssl_ca=PATH (require TLS and verify the server's certificate
// against this CA file). Port 3306 by default. Every part may be
// percent-encoded. MYSQL_PWD and option files (my.cnf) are not read.
//
// Errors: the parts are checked in the order the URL is written, and the
// first fault is reported as "bad MySQL URL: WHY (USAGE)", never with the
// password in it.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "database_url.h"
#include "mariadb_connection.h"
#include "percent_decode.h"
#include "text_file.h"

namespace snowid::sql {
namespace {

// A fault in the URL; read_mysql_url() adds the prefix and the usage.
Error fault(std::string why) { return Error{ErrorCode::kInvalidArgument, std::move(why)}; }

// `text` with its %XX escapes decoded; `what` names the part of the URL in
// the error.
Result<std::string> percent_decoded(std::string_view text, std::string_view what) {
  std::optional<std::string> decoded = percent_decode(text);
  if (!decoded) return fault(fmt::format("bad percent-encoding in the {}", what));
  // The client library reads C strings: a NUL would cut the value short.
  if (decoded->find('\0') != std::string::npos) return fault(fmt::format("a NUL (%00) in the {}", what));
  return std::move(*decoded);
}

Result<std::string> read_password_file(const std::string& path) {
  auto read = read_text_file(path, "password_file");
  if (!read.ok()) return fault(read.error().message);
  std::string password = std::move(*read);
  if (!password.empty() && password.back() == '\n') password.pop_back();
  if (!password.empty() && password.back() == '\r') password.pop_back();
  if (password.empty()) return fault(fmt::format("password_file {} is empty", path));
  return password;
}

// user[:password] into `connection`; `password_in_url` says whether a
// password was given.
Status read_user_info(std::string_view info, MariadbOptions& connection, bool& password_in_url) {
  const auto colon = info.find(':');
  auto user = percent_decoded(info.substr(0, colon), "user");
  if (!user.ok()) return user.error();
  connection.user = *user;
  if (colon != std::string_view::npos) {
    auto password = percent_decoded(info.substr(colon + 1), "password");
    if (!password.ok()) return password.error();
    connection.password = *password;
    password_in_url = true;
  }
  return {};
}

// host[:port] or [v6-address][:port] into `connection`.
Status read_host_and_port(std::string_view authority, MariadbOptions& connection) {
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return fault("unclosed [ in the host");
    connection.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return fault("bad host");
      port_text = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.find(':');
    connection.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (connection.host.empty()) return fault("no host");
  if (connection.host.find(',') != std::string::npos) {
    return fault("several hosts: this URL names one (mysql_url may name several)");
  }
  if (!port_text.empty() || authority.ends_with(':')) {
    unsigned int port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || port > 65535) return fault("bad port");
      port = port * 10 + static_cast<unsigned int>(c - '0');
    }
    if (port == 0 || port > 65535) return fault("bad port");
    connection.port = port;
  }
  return {};
}

// The parameters after the '?': ssl_ca into `url.connection`, the caller's
// own into `url.own_parameters`; returns password_file's value ("" if none).
Result<std::string> read_parameters(std::string_view query, std::span<const std::string_view> own,
                                    MysqlUrl& url) {
  std::string password_file;
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    const auto equals = pair.find('=');
    const std::string_view name = pair.substr(0, equals);
    auto value = percent_decoded(
        equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1),
        "parameters");
    if (!value.ok()) return value.error();
    if (name == "password_file") {
      password_file = *value;
    } else if (name == "ssl_ca") {
      if (value->empty()) return fault("ssl_ca needs a CA file");
      url.connection.ssl_ca = *value;
    } else if (std::find(own.begin(), own.end(), name) != own.end()) {
      url.own_parameters.emplace_back(std::string(name), std::move(*value));
    } else {
      return fault(fmt::format("unknown parameter '{}'", name.substr(0, 32)));
    }
  }
  return password_file;
}

// The whole URL, checked in the order it is written.
Result<MysqlUrl> read_url(std::string_view text, std::span<const std::string_view> own) {
  const std::optional<DatabaseUrlAuthority> parts = database_url_authority(text);
  if (!parts || !parts->has_path()) return fault("no /database");
  MysqlUrl url;
  bool password_in_url = false;
  std::size_t host = parts->begin;
  if (parts->has_user_info()) {
    const std::string_view info = text.substr(parts->begin, parts->last_at - parts->begin);
    if (Status user = read_user_info(info, url.connection, password_in_url); !user.ok()) {
      return user.error();
    }
    host = parts->last_at + 1;
  }
  if (url.connection.user.empty()) return fault("no user");
  Status address = read_host_and_port(text.substr(host, parts->end - host), url.connection);
  if (!address.ok()) return address.error();

  const std::string_view rest = text.substr(parts->end + 1);
  const auto query_start = rest.find('?');
  auto database = percent_decoded(rest.substr(0, query_start), "database");
  if (!database.ok()) return database.error();
  if (database->empty()) return fault("no database");
  url.connection.database = *database;

  if (query_start == std::string_view::npos) return url;
  auto password_file = read_parameters(rest.substr(query_start + 1), own, url);
  if (!password_file.ok()) return password_file.error();
  if (!password_file->empty()) {
    if (password_in_url) return fault("a password both in the URL and in password_file");
    auto password = read_password_file(*password_file);
    if (!password.ok()) return password.error();
    url.connection.password = *password;
  }
  return url;
}

}  // namespace

Error bad_mysql_url(std::string_view why, std::string_view usage) {
  return Error{ErrorCode::kInvalidArgument, fmt::format("bad MySQL URL: {} ({})", why, usage)};
}

Result<MysqlUrl> read_mysql_url(std::string_view url, std::span<const std::string_view> own,
                                std::string_view usage) {
  auto read = read_url(url, own);
  if (!read.ok()) return bad_mysql_url(read.error().message, usage);
  return read;
}

}  // namespace snowid::sql
