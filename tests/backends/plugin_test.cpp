// The plugin ABI check: a libattune_cuda.so from another tree (another ABI version, or none) is
// refused in one line before anything in it is called, and the default backend falls back to sim
// saying why. The fake plugins are built by tests/CMakeLists.txt (fake_plugin.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backends/plugin.h"
#include "backends/registry.h"
#include "support/scoped_env.h"

namespace attune {
namespace {

using testing::ScopedEnv;

std::string fake_plugin_dir(const std::string& kind) {
  return std::string(ATTUNE_FAKE_PLUGINS) + "/" + kind;
}

TEST(Plugin, AnotherAbiIsRefusedInOneLineBeforeItsFactoryIsCalled) {
  ScopedEnv dir("ATTUNE_PLUGIN_DIR", fake_plugin_dir("wrong_abi"));
  auto b = make_backend("cuda");  // the fake's factory aborts: reaching it fails the test
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind(), Error::Kind::kUnsupported);
  EXPECT_EQ(
      b.error().message(),
      fmt::format(
          "the cuda backend is unavailable: libattune_cuda.so speaks plugin ABI {} but this attune "
          "speaks {}: rebuild both from one tree",
          kPluginAbi + 1, kPluginAbi));
}

TEST(Plugin, APluginThatNamesNoAbiIsRefusedInOneLine) {
  ScopedEnv dir("ATTUNE_PLUGIN_DIR", fake_plugin_dir("no_abi"));
  auto b = make_backend("cuda");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message(),
            fmt::format("the cuda backend is unavailable: libattune_cuda.so names no plugin ABI "
                        "(attune_plugin_abi) "
                        "but this attune speaks {}: rebuild both from one tree",
                        kPluginAbi));
}

TEST(Plugin, TheSameAbiReachesTheFactory) {
  ScopedEnv dir("ATTUNE_PLUGIN_DIR", fake_plugin_dir("right_abi"));
  auto b = make_backend("cuda");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message(),
            "the cuda backend failed to start: the fake plugin's factory was reached");
}

TEST(Plugin, TheDefaultBackendFallsBackToSimWithTheRefusal) {
  ScopedEnv dir("ATTUNE_PLUGIN_DIR", fake_plugin_dir("wrong_abi"));
  std::string why;
  EXPECT_EQ(default_backend(&why), "sim");
  EXPECT_NE(why.find("speaks plugin ABI"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace attune
