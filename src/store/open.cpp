// open_store: the one place that picks a Store implementation, by the --db text's scheme.
#include <cctype>

#include "store/sqlite/sqlite_store.h"
#include "store/store.h"
#ifdef ATTUNE_WITH_POSTGRES
#include "store/postgres/pg_store.h"
#endif

namespace attune {

namespace {

// "postgresql" for "postgresql://...", "" for a plain path (a colon without "//" stays part of a
// file name, as in "runs:2024.db").
std::string url_scheme(const std::string& url) {
  const auto sep = url.find("://");
  if (sep == std::string::npos || sep == 0 || !std::isalpha(static_cast<unsigned char>(url[0])))
    return "";
  for (std::size_t i = 0; i < sep; ++i) {
    const unsigned char c = static_cast<unsigned char>(url[i]);
    if (!std::isalnum(c) && c != '+' && c != '-' && c != '.') return "";
  }
  return url.substr(0, sep);
}

}  // namespace

Result<std::optional<ProblemRecord>> one_problem(const std::string& key_or_name,
                                                 std::vector<ProblemRecord> found) {
  if (found.empty()) return std::optional<ProblemRecord>{};
  if (found.size() > 1 && found.front().key != key_or_name) {
    std::string which;
    for (const auto& r : found)
      which += (which.empty() ? "" : ", ") + r.key + " (" + r.problem.text() + ")";
    return Error::invalid_argument("'" + key_or_name + "' names " + std::to_string(found.size()) +
                                   " problems in the database: " + which +
                                   "; give one's structural key");
  }
  return std::optional<ProblemRecord>(std::move(found.front()));
}

std::string device_kind(const DeviceFingerprint& device) {
  return device.backend + ":" + device.name;
}

std::string store_file(const std::string& url) {
  if (url.rfind("sqlite:", 0) == 0) {
    std::string path = url.substr(7);
    if (path.rfind("//", 0) == 0)
      path = path.substr(2);  // sqlite:///abs/a.db as a file URL writes it
    return path;
  }
  return url_scheme(url).empty() ? url : "";
}

Result<std::unique_ptr<Store>> open_store(const std::string& url, bool create_if_missing,
                                          bool read_only_ok) {
  if (url.empty()) return Error::invalid_argument("--db is empty; give a file path");
  const std::string path = store_file(url);
  if (url.rfind("sqlite:", 0) == 0) {
    if (path.empty())
      return Error::invalid_argument("--db '" + url + "' names no file; give sqlite:PATH");
  } else if (const std::string scheme = url_scheme(url);
             scheme == "postgresql" || scheme == "postgres") {
#ifdef ATTUNE_WITH_POSTGRES
    ATTUNE_ASSIGN(std::unique_ptr<PostgresStore> s, PostgresStore::open(url, create_if_missing));
    return std::unique_ptr<Store>(std::move(s));
#else
    return Error::unsupported("--db " + scheme +
                              "://...: this attune was built without PostgreSQL support; "
                              "use an SQLite file path (or sqlite:PATH)");
#endif
  } else if (!scheme.empty()) {
    return Error::invalid_argument("--db '" + url + "': unknown database scheme '" + scheme +
                                   "' (attune opens PATH, sqlite:PATH or postgresql://...)");
  }
  ATTUNE_ASSIGN(std::unique_ptr<SqliteStore> s,
                SqliteStore::open(path, create_if_missing, read_only_ok));
  return std::unique_ptr<Store>(std::move(s));
}

}  // namespace attune
