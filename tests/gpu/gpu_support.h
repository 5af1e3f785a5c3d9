// GPU tests: the CUDA backend through the plugin, skipped where no GPU answers.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "backends/registry.h"

namespace attune::testing {

// The CUDA backend, or nullptr after GTEST_SKIP-ready reason in *why.
inline std::unique_ptr<Backend> cuda_backend_or_skip(std::string* why) {
  auto b = make_backend("cuda");
  if (!b) {
    *why = b.error().message();
    return nullptr;
  }
  auto fp = (*b)->fingerprint();
  if (!fp) {
    *why = fp.error().message();
    return nullptr;
  }
  return std::move(*b);
}

#define ATTUNE_REQUIRE_GPU(backend)                                     \
  std::string attune_why_;                                              \
  auto backend = ::attune::testing::cuda_backend_or_skip(&attune_why_); \
  if (!backend) GTEST_SKIP() << "no GPU: " << attune_why_

}  // namespace attune::testing
