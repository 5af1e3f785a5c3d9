// store_schema::check_columns, the refusal both stores give a database missing a table or column
// of its schema version: what it names, and that what a user added is fine.
#include "store/schema_check.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

const std::set<std::string> kWant = {"a.x", "a.y", "b.x", "c.x", "d.x", "e.x"};

TEST(SchemaCheck, EverythingThereAndMoreIsFine) {
  EXPECT_TRUE(store_schema::check_columns(kWant, kWant, 3, "db").ok());
  std::set<std::string> more = kWant;
  more.insert({"a.note", "notes.id"});
  EXPECT_TRUE(store_schema::check_columns(kWant, more, 3, "db").ok());
}

TEST(SchemaCheck, AMissingTableIsNamedOnceAndAMissingColumnByTable) {
  auto s = store_schema::check_columns(kWant, {"a.x", "b.x", "c.x", "d.x", "e.x"}, 4, "f.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), Error::Kind::kCorrupt);
  EXPECT_EQ(s.error().message(),
            "f.db is a damaged attune database (schema v4 without column a.y); refusing to touch "
            "it (pass another --db)");
  auto t = store_schema::check_columns(kWant, {"b.x", "c.x", "d.x", "e.x"}, 4, "f.db");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("(schema v4 without table a)"), std::string::npos)
      << t.error().message();
}

TEST(SchemaCheck, ThreeAreNamedThenHowManyMore) {
  auto s = store_schema::check_columns(kWant, {"a.x", "zz.x"}, 2, "f.db");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("(schema v2 without column a.y, table b, table c and 2 more)"),
            std::string::npos)
      << s.error().message();
}

}  // namespace
}  // namespace attune
