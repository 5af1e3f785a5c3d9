// open_store picks the store by the --db text's scheme: a path or sqlite: opens SQLite, a
// PostgreSQL URL is refused in one line by a build without it, another scheme is bad input.
#include <filesystem>

#include <gtest/gtest.h>

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

TEST(OpenStore, PostgresqlIsRefusedInOneLineByABuildWithoutIt) {
  for (const char* url : {"postgresql://tuner:secret@db.example/attune", "postgres://db/attune"}) {
    auto s = open_store(url);
    ASSERT_FALSE(s.ok()) << url;
    EXPECT_EQ(s.error().kind(), Error::Kind::kUnsupported);
    EXPECT_NE(s.error().message().find("this attune was built without PostgreSQL support"),
              std::string::npos)
        << s.error().message();
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

}  // namespace
}  // namespace attune
