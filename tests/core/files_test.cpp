#include "core/files.h"

#include <sys/stat.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

TEST(Files, AMissingFileOrADirectoryIsOneLineNotAnException) {
  TempDir dir;
  auto missing = read_text_file(dir.file("nope.txt"), "shapes file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(), "shapes file " + dir.file("nope.txt") + " does not exist");
  fs::create_directory(dir.file("d"));
  auto directory = read_text_file(dir.file("d"), "the --verify file");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().message(),
            "the --verify file " + dir.file("d") + " is a directory, not a file");
  write_bytes(dir.file("t.txt"), "a\nb\n");
  EXPECT_EQ(*read_text_file(dir.file("t.txt"), "x"), "a\nb\n");
}

TEST(Files, WritingThroughALinkReplacesTheFileItNamesAndKeepsTheLink) {
  TempDir dir;
  write_bytes(dir.file("t.html"), "old");
  fs::create_symlink("t.html", dir.file("l.html"));
  ASSERT_TRUE(write_text_file(dir.file("l.html"), "new").ok());
  EXPECT_TRUE(fs::is_symlink(dir.file("l.html")));
  EXPECT_EQ(read_bytes(dir.file("t.html")), "new");
  EXPECT_FALSE(fs::exists(dir.file("t.html.tmp")));
  // A new file is written whole.
  ASSERT_TRUE(write_text_file(dir.file("fresh.json"), "{}").ok());
  EXPECT_EQ(read_bytes(dir.file("fresh.json")), "{}");
  // A directory is refused by name.
  auto onto_dir = write_text_file(dir.path().string(), "x");
  ASSERT_FALSE(onto_dir.ok());
  EXPECT_NE(onto_dir.error().message().find("is a directory"), std::string::npos);
}

TEST(Files, ADeviceOrPipeIsWrittenToNeverReplaced) {
  TempDir dir;
  // A link to /dev/null, as -o /dev/stdout is a link to the terminal or pipe: writing it must
  // leave the link (and the device) in place.
  fs::create_symlink("/dev/null", dir.file("sink"));
  ASSERT_TRUE(write_text_file(dir.file("sink"), "rows\n").ok());
  EXPECT_TRUE(fs::is_symlink(dir.file("sink")));
  EXPECT_TRUE(fs::is_character_file(dir.file("sink")));
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  // A FIFO opened for reading without blocking, so the write below finds a reader.
  std::FILE* reader = std::fopen(dir.file("fifo").c_str(), "r+");
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(write_text_file(dir.file("fifo"), "abc").ok());
  char got[4] = {};
  ASSERT_EQ(std::fread(got, 1, 3, reader), 3u);
  std::fclose(reader);
  EXPECT_STREQ(got, "abc");
  EXPECT_TRUE(fs::is_fifo(dir.file("fifo")));
}

TEST(Files, SameFileSeesThroughRelativePathsAndLinks) {
  TempDir dir;
  write_bytes(dir.file("a.db"), "x");
  fs::create_symlink("a.db", dir.file("b.db"));
  EXPECT_TRUE(same_file(dir.file("a.db"), dir.file("b.db")));
  EXPECT_TRUE(same_file(dir.file("a.db"), (dir.path() / "." / "a.db").string()));
  EXPECT_FALSE(same_file(dir.file("a.db"), dir.file("c.db")));  // c.db does not exist
}

}  // namespace
}  // namespace attune
