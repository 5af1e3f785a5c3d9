// open_store picks the store by the --db text's scheme: a path or sqlite: opens SQLite, a
// PostgreSQL URL is refused in one line by a build without it, another scheme is bad input.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "store/sqlite/schema.h"
#include "store/sqlite/sqlite_db.h"
#include "store/store.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

using testing::TempDir;

// The file holds an attune database: SQLite's header, written by open_store.
bool is_sqlite_file(const std::string& path) {
  return testing::read_bytes(path).rfind("SQLite format 3", 0) == 0;
}

TEST(OpenStore, APathOrSqliteColonOpensAnSqliteFile) {
  TempDir dir;
  ASSERT_TRUE(open_store(dir.file("plain.db")).ok());
  EXPECT_TRUE(is_sqlite_file(dir.file("plain.db")));
  ASSERT_TRUE(open_store("sqlite:" + dir.file("colon.db")).ok());
  EXPECT_TRUE(is_sqlite_file(dir.file("colon.db")));
  // sqlite:///abs/path as a file URL writes an absolute path.
  ASSERT_TRUE(open_store("sqlite://" + dir.file("url.db")).ok());
  EXPECT_TRUE(is_sqlite_file(dir.file("url.db")));
  // A colon without "//" is part of a file name.
  ASSERT_TRUE(open_store(dir.file("runs:2026.db")).ok());
  EXPECT_TRUE(is_sqlite_file(dir.file("runs:2026.db")));
}

TEST(OpenStore, TheSameFileThroughEitherSpellingIsOneDatabase) {
  TempDir dir;
  auto a = open_store(dir.file("a.db"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->put_device({"sim", "x", "sim_1", 1, 1}).ok());
  auto b = open_store("sqlite:" + dir.file("a.db"), false);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ((*b)->devices()->size(), 1u);
}

// Both spellings reach the PostgreSQL store (here a server that is not there, so the answer is
// one line naming the URL, its password elided) or, in a build without it, a one-line refusal.
TEST(OpenStore, PostgresqlUrlsReachThePostgresqlStoreOrAreRefusedInOneLine) {
  for (const char* url : {"postgresql://tuner:secret@127.0.0.1:1/attune?connect_timeout=5",
                          "postgres://tuner:secret@127.0.0.1:1/attune"}) {
    auto s = open_store(url);
    ASSERT_FALSE(s.ok()) << url;
#ifdef ATTUNE_WITH_POSTGRES
    EXPECT_EQ(s.error().kind(), Error::Kind::kIo);
    EXPECT_NE(s.error().message().find("cannot connect to the PostgreSQL database"),
              std::string::npos)
        << s.error().message();
    EXPECT_NE(s.error().message().find("tuner:***@127.0.0.1:1/attune"), std::string::npos)
        << s.error().message();
#else
    EXPECT_EQ(s.error().kind(), Error::Kind::kUnsupported);
    EXPECT_NE(s.error().message().find("this attune was built without PostgreSQL support"),
              std::string::npos)
        << s.error().message();
#endif
    EXPECT_EQ(s.error().message().find("secret"), std::string::npos);  // a password is not echoed
    EXPECT_EQ(s.error().message().find('\n'), std::string::npos);
  }
}

TEST(OpenStore, AnUnknownSchemeOrNothingIsBadInput) {
  auto mysql = open_store("mysql://db/attune");
  ASSERT_FALSE(mysql.ok());
  EXPECT_EQ(mysql.error().kind(), Error::Kind::kInvalidArgument);
  EXPECT_NE(mysql.error().message().find("unknown database scheme 'mysql'"), std::string::npos);
  EXPECT_EQ(open_store("").error().kind(), Error::Kind::kInvalidArgument);
  EXPECT_EQ(open_store("sqlite:").error().kind(), Error::Kind::kInvalidArgument);
}

TEST(OpenStore, AMissingFileIsNotCreatedWhenAskedNotTo) {
  TempDir dir;
  auto s = open_store("sqlite:" + dir.file("absent.db"), false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), Error::Kind::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent.db")));
}

// A database whose attune_schema says something no attune wrote (a negative version made every
// command segfault): one line, Error::corrupt (the CLI exits 2), the file byte for byte as it was.
TEST(OpenStore, AnOutOfRangeSchemaVersionIsRefusedInOneLineAndTheFileLeftAlone) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"UPDATE attune_schema SET version = -1", "schema version -1"},
      {"UPDATE attune_schema SET version = -2147483649", "schema version -2147483649"},
      {"UPDATE attune_schema SET version = 0", "schema version 0"},
      {"UPDATE attune_schema SET version = 4294967301", "schema version 4294967301"},
      {"UPDATE attune_schema SET version = 'five'", "schema version 'five'"},
      {"DELETE FROM attune_schema", "0 rows"},
      {"INSERT INTO attune_schema VALUES (1)", "2 rows"},
  };
  for (const auto& [sql, says] : cases) {
    TempDir dir;
    const std::string path = dir.file("a.db");
    ASSERT_TRUE(open_store(path).ok());
    {
      sqlite3* raw = nullptr;
      ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
      sqlite::Db db{sqlite::DbHandle(raw)};
      ASSERT_TRUE(db.exec(sql).ok()) << sql;
      ASSERT_TRUE(db.exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
    }
    const std::string before = testing::read_bytes(path);
    auto s = open_store(path);
    ASSERT_FALSE(s.ok()) << sql;
    EXPECT_EQ(s.error().kind(), Error::Kind::kCorrupt) << s.error().message();
    EXPECT_NE(s.error().message().find(says), std::string::npos) << s.error().message();
    EXPECT_NE(s.error().message().find(path), std::string::npos) << s.error().message();
    EXPECT_EQ(s.error().message().find('\n'), std::string::npos) << s.error().message();
    EXPECT_EQ(testing::read_bytes(path), before) << sql;
  }
}

}  // namespace
}  // namespace attune
