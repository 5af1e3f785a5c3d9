// The driver loaded at run time (src/cuda/driver.h): on a host without one (CI), every call
// answers CUDA_ERROR_NO_DEVICE and the error says there is no driver, in words, with a path
// inside the source tree rather than the build machine's.
#include "cuda/driver.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include "cuda/cuda_check.h"

namespace attune::cuda {
namespace {

Status init() {
  ATTUNE_CU(cuInit(0));
  return Status::success();
}

TEST(Driver, WithoutADriverCallsFailWithOneLineThatSaysSo) {
  auto missing = driver_load_error();
  if (!missing) GTEST_SKIP() << "a driver is installed here";
  EXPECT_NE(missing->find("libcuda.so.1"), std::string::npos) << *missing;
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  int n = -1;
  EXPECT_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NO_DEVICE);
  Status s = init();
  ASSERT_FALSE(s.ok());
  const std::string m = s.error().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("cuInit(0) failed: CUDA_ERROR_NO_DEVICE; no NVIDIA driver: libcuda.so.1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("[tests/cuda/driver_test.cpp:"), std::string::npos) << m;
}

TEST(Driver, ErrorsNameTheCodeEvenWhenTheDriverCannot) {
  // A code the fallback table names, and one it does not: never "CUDA error" without a name or
  // a number.
  const std::string stub =
      driver_error(CUDA_ERROR_STUB_LIBRARY, "cuInit(0)", "src/x.cpp", 1).message();
  EXPECT_NE(stub.find("CUDA_ERROR_STUB_LIBRARY"), std::string::npos) << stub;
  const std::string other =
      driver_error(static_cast<CUresult>(999), "cuInit(0)", "src/x.cpp", 1).message();
  EXPECT_TRUE(other.find("999") != std::string::npos ||
              other.find("CUDA_ERROR_UNKNOWN") != std::string::npos)
      << other;
  EXPECT_NE(other.find("[src/x.cpp:1]"), std::string::npos) << other;
}

TEST(Driver, MessagesNameFilesInTheTreeNotOnTheBuildMachine) {
  EXPECT_EQ(in_tree("/home/ci/attune/src/cuda/cuda_device.cpp"), "src/cuda/cuda_device.cpp");
  EXPECT_EQ(in_tree("../src/cuda/cuda_device.cpp"), "src/cuda/cuda_device.cpp");
  EXPECT_EQ(in_tree("/w/mysrc/tests/cuda/x.cpp"), "tests/cuda/x.cpp");
  EXPECT_EQ(in_tree("src/a.cpp"), "src/a.cpp");
  EXPECT_EQ(in_tree("elsewhere.cpp"), "elsewhere.cpp");
}

}  // namespace
}  // namespace attune::cuda
