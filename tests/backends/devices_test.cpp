// Device enumeration and selection: the sim's one device (or ATTUNE_SIM_DEVICES=N identical
// ones), a refused index naming how many there are, and the index reaching the worker process so
// its candidates run on that device (seen through the sim's ATTUNE_SIM_TRACE).
#include <gtest/gtest.h>

#include "backends/sim/sim_backend.h"
#include "backends/worker/worker.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace attune {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

TEST(Devices, TheSimHasOneDeviceByDefault) {
  SimBackend sim;
  auto all = sim.devices();
  ASSERT_TRUE(all.ok()) << all.error().message();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].key(), sim.fingerprint()->key());
  EXPECT_TRUE(sim.select_device(0).ok());
  EXPECT_EQ(sim.device_index(), 0);
  Status st = sim.select_device(1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind(), Error::Kind::kInvalidArgument);
  EXPECT_EQ(
      st.error().message(),
      "the sim backend has 1 device (index 0), not device 1; attune device --list shows them");
}

TEST(Devices, ATestMachineOfSeveralIdenticalSimDevices) {
  ScopedEnv count("ATTUNE_SIM_DEVICES", "3");
  SimBackend sim;
  auto all = sim.devices();
  ASSERT_TRUE(all.ok()) << all.error().message();
  ASSERT_EQ(all->size(), 3u);
  // GPUs of one kind share the key: what one measured applies to the others.
  for (const auto& d : *all) EXPECT_EQ(d.key(), (*all)[0].key());
  ASSERT_TRUE(sim.select_device(2).ok());
  EXPECT_EQ(sim.device_index(), 2);
  Status st = sim.select_device(3);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("has 3 devices (indexes 0..2), not device 3"),
            std::string::npos)
      << st.error().message();
  EXPECT_FALSE(sim.select_device(-1).ok());
  EXPECT_EQ(sim.device_index(), 2);  // a refused index changes nothing
}

TEST(Devices, ABadSimDeviceCountIsOneLine) {
  ScopedEnv count("ATTUNE_SIM_DEVICES", "two");
  SimBackend sim;
  auto all = sim.devices();
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.error().message(), "ATTUNE_SIM_DEVICES='two' is not a device count (1..1024)");
  EXPECT_FALSE(sim.select_device(0).ok());
}

// A backend with one device and no enumeration of its own gets the interface's defaults.
class OneDevice final : public Backend {
 public:
  std::string name() const override { return "one"; }
  Result<DeviceFingerprint> fingerprint() override {
    return DeviceFingerprint{"one", "only", "x", 1, 1};
  }
  std::vector<ProblemInfo> problems() const override { return {}; }
  Result<Problem> resolve(const std::string&) const override { return Error::not_found("none"); }
  Result<Space> space(const Problem&) const override { return Error::not_found("none"); }
  Outcome execute(const Problem&, const Config&, Regime) override { return {}; }
};

TEST(Devices, ABackendWithoutEnumerationHasItsOneDevice) {
  OneDevice b;
  auto all = b.devices();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].name, "only");
  EXPECT_TRUE(b.select_device(0).ok());
  ASSERT_FALSE(b.select_device(4).ok());
  EXPECT_EQ(
      b.select_device(4).error().message(),
      "the one backend has 1 device (index 0), not device 4; attune device --list shows them");
}

struct WorkerDevice : ::testing::Test {
  TempDir dir;
  ScopedEnv count{"ATTUNE_SIM_DEVICES", "2"};
  ScopedEnv trace{"ATTUNE_SIM_TRACE", dir.file("trace")};
  SimBackend sim;
  Problem gemm = *sim.resolve("gemm");
  Space space = *sim.space(gemm);
  Config baseline = space.config(space.baseline());

  Outcome run_on(const std::string& device) {
    WorkerRunner runner({ATTUNE_BINARY, "candidate-worker", "--backend", "sim", "--device", device},
                        5.0);
    return runner.run(gemm, baseline, Regime::kRank);
  }
};

TEST_F(WorkerDevice, TheWorkerRunsItsCandidatesOnTheDeviceItIsGiven) {
  Outcome o = run_on("1");
  ASSERT_EQ(o.verdict, Verdict::kOk) << o.message;
  EXPECT_EQ(testing::read_bytes(dir.file("trace")),
            "device=1 problem=" + gemm.text() + " config=" + baseline.text() + " regime=rank\n");
}

TEST_F(WorkerDevice, AWorkerGivenAnIndexOutOfRangeRefusesToStartInOneLine) {
  Outcome o = run_on("2");
  EXPECT_EQ(o.verdict, Verdict::kCrashed);
  EXPECT_NE(o.message.find("exited with status 2"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("has 2 devices (indexes 0..1), not device 2"), std::string::npos)
      << o.message;
  EXPECT_TRUE(testing::read_bytes(dir.file("trace")).empty());  // nothing ran
}

}  // namespace
}  // namespace attune
