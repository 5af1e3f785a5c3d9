// The host-reference ABI end to end, as the CUDA backend will use it: a spec naming a shared
// library, buffers laid out from instantiate_reference(), the function found with dlsym and
// called. CPU only.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/user/spec.h"
#include "support/temp_dir.h"

namespace attune::user {
namespace {

using attune::testing::TempDir;
using attune::testing::write_bytes;

using ReferenceFn = int (*)(void* const*, const std::int64_t*, int);

TEST(ReferenceLibrary, TheExampleFollowsTheDocumentedAbi) {
  TempDir dir;
  const std::filesystem::path examples =
      std::filesystem::path(ATTUNE_SOURCE_DIR) / "examples" / "user-kernel";
  std::string yaml = attune::testing::read_bytes((examples / "vector_add.yaml").string());
  auto at = yaml.find("reference:");
  ASSERT_NE(at, std::string::npos);
  auto end = yaml.find("\n\n", at);
  yaml.replace(at, end - at,
               std::string("reference:\n  library: {path: ") + ATTUNE_VECTOR_ADD_REF +
                   ", function: vector_add_ref}");
  write_bytes(dir.file("spec.yaml"), yaml);
  auto spec = load_spec(dir.path() / "spec.yaml", examples / "vector_add.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  ASSERT_TRUE(set_problem_sizes(*spec, "n=1001").ok());
  ASSERT_TRUE(std::holds_alternative<ReferenceLibrary>(spec->reference));
  const auto& lib = std::get<ReferenceLibrary>(spec->reference);

  auto inst = instantiate_reference(*spec);
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  std::vector<std::vector<unsigned char>> storage;
  std::vector<void*> args;
  std::vector<std::int64_t> counts;
  for (auto& a : inst->args) {
    if (a.role == ArgRole::kScalar) {
      args.push_back(a.scalar_bytes.data());
    } else {
      storage.emplace_back(static_cast<std::size_t>(a.bytes));
      args.push_back(storage.back().data());
    }
    counts.push_back(a.elements);
  }
  float* c = static_cast<float*>(args[0]);
  float* a = static_cast<float*>(args[1]);
  float* b = static_cast<float*>(args[2]);
  for (int i = 0; i < 1001; ++i) {
    a[i] = static_cast<float>(i) * 0.5f;
    b[i] = 1.0f - static_cast<float>(i);
    c[i] = -1234.0f;
  }

  std::unique_ptr<void, int (*)(void*)> handle(dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL),
                                               dlclose);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto fn = reinterpret_cast<ReferenceFn>(dlsym(handle.get(), lib.function.c_str()));
  ASSERT_NE(fn, nullptr) << dlerror();
  ASSERT_EQ(fn(args.data(), counts.data(), static_cast<int>(args.size())), 0);
  for (int i = 0; i < 1001; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  // The function refuses what it was not written for, and attune fails the check.
  EXPECT_NE(fn(args.data(), counts.data(), 3), 0);
}

}  // namespace
}  // namespace attune::user
