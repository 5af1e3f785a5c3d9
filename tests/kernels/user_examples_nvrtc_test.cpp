// The user-kernel examples built the way the CUDA backend builds them: NVRTC for sm_90a, with the
// name expression and options instantiate() gives, for the baseline, the last config of the
// space and the reference. No GPU needed.
#include <gtest/gtest.h>

#include "cuda/nvrtc_build.h"
#include "kernels/user/spec.h"

namespace attune::user {
namespace {

void expect_builds(const cuda::Compiler& c, const std::string& source,
                   const std::filesystem::path& path, const Instance& inst) {
  cuda::BuildRequest r{
      source, path.filename().string(), inst.compile_options, {inst.name_expression}};
  auto b = c.build(r);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(b->ok) << inst.name_expression << ": " << b->log;
  EXPECT_EQ(b->lowered_names.count(inst.name_expression), 1u);
}

class UserExampleNvrtc : public ::testing::TestWithParam<std::string> {};

TEST_P(UserExampleNvrtc, BuildsForHopper) {
  const auto dir = std::filesystem::path(ATTUNE_SOURCE_DIR) / "examples" / "user-kernel";
  auto spec = load_spec(dir / (GetParam() + ".yaml"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  EXPECT_TRUE(spec->warnings.empty());
  auto space = make_space(*spec);
  ASSERT_TRUE(space.ok()) << space.error().message();
  cuda::Compiler c("sm_90a", "");
  auto base = instantiate(*spec, space->config(space->baseline()));
  ASSERT_TRUE(base.ok()) << base.error().message();
  expect_builds(c, spec->source, spec->source_path, *base);
  Point last;
  for (auto e = space->enumerate(); auto p = e.next();) last = *p;
  auto big = instantiate(*spec, space->config(last));
  ASSERT_TRUE(big.ok()) << big.error().message();
  expect_builds(c, spec->source, spec->source_path, *big);
  auto ref = instantiate_reference(*spec);
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  const auto& rk = std::get<ReferenceKernel>(spec->reference);
  expect_builds(c, rk.source, rk.source_path, *ref);
}

INSTANTIATE_TEST_SUITE_P(Examples, UserExampleNvrtc, ::testing::Values("vector_add", "transpose"));

}  // namespace
}  // namespace attune::user
