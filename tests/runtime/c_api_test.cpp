// libattune-rt's C API where no GPU is needed: what attune_rt_open says about a bad table or a bad
// ATTUNE_DEVICE comes before it touches a device, so a user's CI without a GPU sees the same code
// and message a GPU host does.
#include <stdlib.h>
#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>

#include "attune/runtime_c.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

TEST(RuntimeCApi, ABadTableIsNamedBeforeAnyDeviceIsOpened) {
  testing::TempDir dir;
  attune_rt* rt = nullptr;
  EXPECT_EQ(attune_rt_open(dir.file("absent.json").c_str(), -1, &rt), ATTUNE_RT_BAD_TABLE);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(attune_rt_last_error()).find("absent.json does not exist"),
            std::string::npos)
      << attune_rt_last_error();
  testing::write_bytes(dir.file("t.json"), R"({"format": 5})");
  EXPECT_EQ(attune_rt_open(dir.file("t.json").c_str(), -1, &rt), ATTUNE_RT_BAD_TABLE);
  EXPECT_NE(std::string(attune_rt_last_error()).find("not an attune table"), std::string::npos)
      << attune_rt_last_error();
  // A pipe named as the table is refused unread: reading one with no writer would block forever.
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  EXPECT_EQ(attune_rt_open(dir.file("fifo").c_str(), -1, &rt), ATTUNE_RT_BAD_TABLE);
  EXPECT_NE(std::string(attune_rt_last_error()).find("is not a regular file"), std::string::npos)
      << attune_rt_last_error();
}

TEST(RuntimeCApi, AnAttuneDeviceThatIsNotAnIndexIsRefused) {
  for (const char* bad : {"abc", "", "1x", "-2"}) {
    ::setenv("ATTUNE_DEVICE", bad, 1);
    attune_rt* rt = nullptr;
    EXPECT_EQ(attune_rt_open(nullptr, -1, &rt), ATTUNE_RT_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(attune_rt_last_error()).find("is not a device index"), std::string::npos)
        << attune_rt_last_error();
  }
  ::unsetenv("ATTUNE_DEVICE");
}

}  // namespace
}  // namespace attune
