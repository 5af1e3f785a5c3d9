#include "store/postgres/pg_db.h"

#include <fmt/format.h>

namespace attune::pg {

std::string shown_url(const std::string& url) {
  std::string out = url;
  // postgresql://user:secret@host/db
  if (const auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto authority = scheme + 3;
    const auto at = out.find('@', authority);
    const auto slash = out.find('/', authority);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const auto colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // ...?password=secret&...
  for (auto p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const auto begin = p + 9;
    const auto end = out.find('&', begin);
    out.replace(begin, (end == std::string::npos ? out.size() : end) - begin, "***");
  }
  return out;
}

Params& Params::add(double v) {
  return add(fmt::format("{}", v));
}

Params& Params::add_bytes(const std::string& bytes) {
  std::string hex = "\\x";
  hex.reserve(2 + 2 * bytes.size());
  constexpr char kDigits[] = "0123456789abcdef";
  for (unsigned char c : bytes) {
    hex += kDigits[c >> 4];
    hex += kDigits[c & 15];
  }
  values_.emplace_back(std::move(hex));
  return *this;
}

pqxx::result exec(pqxx::transaction_base& tx, const std::string& sql, const Params& params) {
  std::vector<const char*> values;
  values.reserve(params.values().size());
  for (const auto& v : params.values()) values.push_back(v ? v->c_str() : nullptr);
  return tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values));
}

namespace {

// The server's message on one line, without its "ERROR:" banner or the statement it quotes.
std::string first_line(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  for (const char* banner : {"ERROR:", "FATAL:"})
    if (line.rfind(banner, 0) == 0) line.erase(0, std::string(banner).size());
  const auto first = line.find_first_not_of(' ');
  return first == std::string::npos ? std::string("no message") : line.substr(first);
}

}  // namespace

Error error_from(const std::exception& e, const std::string& what, const std::string& url) {
  const std::string why = first_line(e.what());
  if (dynamic_cast<const pqxx::broken_connection*>(&e))
    return Error::io(fmt::format("{}: lost the connection to {}: {}", what, shown_url(url), why));
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    // Class 23: integrity constraint violations (a row naming what the store does not know).
    if (sql->sqlstate().rfind("23", 0) == 0)
      return Error::invalid_argument(fmt::format("{}: {}", what, why));
    return Error::io(fmt::format("{}: {}", what, why));
  }
  return Error::io(fmt::format("{}: {}", what, why));
}

}  // namespace attune::pg
