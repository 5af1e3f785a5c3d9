// A database of its own on the throwaway PostgreSQL cluster (tools/pg-test-cluster, the ctest
// fixture pg_cluster) for each test, so tests run in parallel without seeing each other's rows.
// The cluster's URL comes from $ATTUNE_TEST_PG_URL, or from the file the fixture writes it to
// ($ATTUNE_TEST_PG_URL_FILE, else the path the test was built with). One thread per object.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#ifdef ATTUNE_WITH_POSTGRES
#include <pqxx/pqxx>
#endif

namespace attune::testing {

// The cluster's maintenance URL, or "" with *why saying why there is none: a skip when
// PostgreSQL is not installed or the test runs outside ctest, a failure when the fixture that
// should have started it did not.
inline std::string test_cluster_url(std::string* why, bool* must_fail) {
  *must_fail = false;
  if (const char* url = std::getenv("ATTUNE_TEST_PG_URL"); url && *url) return url;
  const char* file = std::getenv("ATTUNE_TEST_PG_URL_FILE");
#ifdef ATTUNE_TEST_PG_URL_FILE
  if (!file || !*file) file = ATTUNE_TEST_PG_URL_FILE;
#endif
  std::ifstream in(file ? file : "");
  if (!file || !*file || !in) {
    *why =
        "no PostgreSQL test cluster: run this test through ctest (fixture pg_cluster), or set "
        "ATTUNE_TEST_PG_URL to a database URL";
    return "";
  }
  std::string line;
  std::getline(in, line);
  if (line.rfind("skip: ", 0) == 0) {
    *why = line.substr(6);
    return "";
  }
  if (line.rfind("postgresql://", 0) != 0) {
    *must_fail = true;
    *why = std::string("the pg_cluster fixture wrote no URL to ") + file +
           " (tools/pg-test-cluster start failed?)";
    return "";
  }
  return line;
}

// The cluster URL with its database replaced by `db`.
inline std::string with_database(const std::string& url, const std::string& db) {
  const auto authority = url.find("://") + 3;
  const auto slash = url.find('/', authority);
  const auto query = url.find('?', authority);
  std::string out = url.substr(0, slash == std::string::npos ? query : slash) + "/" + db;
  if (query != std::string::npos) out += url.substr(query);
  return out;
}

// CREATE DATABASE at construction, DROP DATABASE ... WITH (FORCE) at destruction.
class TestDatabase {
 public:
  TestDatabase() {
#ifndef ATTUNE_WITH_POSTGRES
    why_not_ = "this attune is built without its PostgreSQL store (libpqxx-dev not installed)";
    return;
#endif
    cluster_ = test_cluster_url(&why_not_, &must_fail_);
    if (cluster_.empty()) return;
    static std::atomic<int> count{0};
    std::random_device rd;
    name_ = "attune_test_" + std::to_string(getpid()) + "_" + std::to_string(count++) + "_" +
            std::to_string(rd() % 100000);
#ifdef ATTUNE_WITH_POSTGRES
    try {
      pqxx::connection c(cluster_);
      pqxx::nontransaction tx(c);
      tx.exec("CREATE DATABASE " + name_);
      url_ = with_database(cluster_, name_);
    } catch (const std::exception& e) {
      must_fail_ = true;
      why_not_ = std::string("cannot create a test database on ") + cluster_ + ": " + e.what();
    }
#endif
  }
  ~TestDatabase() {
#ifdef ATTUNE_WITH_POSTGRES
    if (url_.empty()) return;
    try {
      pqxx::connection c(cluster_);
      pqxx::nontransaction tx(c);
      tx.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (const std::exception&) {
      // The cluster goes away with the fixture anyway.
    }
#endif
  }
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  // "" when there is no cluster: why_not() says why, must_fail() whether that is a failure.
  const std::string& url() const {
    return url_;
  }
  const std::string& why_not() const {
    return why_not_;
  }
  bool must_fail() const {
    return must_fail_;
  }
  // SQL run on the database directly, as another program (or an older attune) would write it.
#ifdef ATTUNE_WITH_POSTGRES
  void exec(const std::string& sql) const {
    pqxx::connection c(url_);
    pqxx::nontransaction tx(c);
    tx.exec(sql);
  }
#endif

 private:
  std::string cluster_, name_, url_, why_not_;
  bool must_fail_ = false;
};

// In a test body: skips (or fails, where the fixture should have given a cluster) without one.
#define ATTUNE_NEED_POSTGRES(db)                                      \
  do {                                                                \
    if ((db).url().empty()) {                                         \
      if ((db).must_fail()) FAIL() << (db).why_not();                 \
      GTEST_SKIP() << "PostgreSQL tests skipped: " << (db).why_not(); \
    }                                                                 \
  } while (0)

}  // namespace attune::testing
