// Compiles the user-kernel examples with nvcc exactly as their specs say: the name expression
// and compile options of the baseline, of a large config and of the reference. Catches a spec
// and its .cu drifting apart (a renamed macro, a template parameter added) without a GPU.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "kernels/user/spec.h"
#include "support/temp_dir.h"

namespace attune::user {
namespace {

using attune::testing::TempDir;
using attune::testing::write_bytes;

std::filesystem::path example(const std::string& name) {
  return std::filesystem::path(ATTUNE_SOURCE_DIR) / "examples" / "user-kernel" / name;
}

// nvcc on a wrapper that includes the source and takes the kernel's address, which
// instantiates a template-id just as nvrtcAddNameExpression does.
void compile(const TempDir& dir, const std::filesystem::path& source, const Instance& inst) {
  const std::string wrapper = dir.file("wrapper.cu");
  write_bytes(wrapper, "#include \"" + source.string() + "\"\nvoid* attune_kernel = (void*)&" +
                           inst.name_expression + ";\n");
  std::string cmd = std::string(ATTUNE_NVCC) + " -arch=sm_90 -c -o " + dir.file("wrapper.o");
  for (const auto& o : inst.compile_options) cmd += " '" + o + "'";
  cmd += " " + wrapper + " 2>" + dir.file("log.txt");
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd << "\n" << attune::testing::read_bytes(dir.file("log.txt"));
}

class ExampleCompiles : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleCompiles, BaselineLargestAndReference) {
  if (std::string(ATTUNE_NVCC).empty()) GTEST_SKIP() << "nvcc not found";
  const std::string name = GetParam();
  auto spec = load_spec(example(name + ".yaml"), example(name + ".cu"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto space = make_space(*spec);
  ASSERT_TRUE(space.ok()) << space.error().message();
  TempDir dir;
  auto base = instantiate(*spec, space->config(space->baseline()));
  ASSERT_TRUE(base.ok()) << base.error().message();
  compile(dir, spec->source_path, *base);
  // The last config in enumeration order takes the largest option of every knob it can.
  Point last;
  for (auto e = space->enumerate(); auto p = e.next();) last = *p;
  auto big = instantiate(*spec, space->config(last));
  ASSERT_TRUE(big.ok()) << big.error().message();
  compile(dir, spec->source_path, *big);
  auto ref = instantiate_reference(*spec);
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  compile(dir, std::get<ReferenceKernel>(spec->reference).source_path, *ref);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleCompiles, ::testing::Values("vector_add", "transpose"));

}  // namespace
}  // namespace attune::user
