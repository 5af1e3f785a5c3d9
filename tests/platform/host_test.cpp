// The host fingerprint on a made-up machine: a cpuinfo file, a fake nvidia-smi and tools that
// answer --version on stdout, on stderr, or not at all.
#include "platform/host.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace attune::platform {
namespace {

using testing::TempDir;
using testing::write_bytes;

class HostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_bytes(dir_.file("cpuinfo"),
                "processor\t: 0\nmodel name\t: Test CPU 9000\n\nprocessor\t: 1\n"
                "model name\t: Test CPU 9000\n\nprocessor\t: 2\n");
    program("tool", "echo; echo 'tool 2.1 (built today)'; echo second line");
    program("old-tool", "echo 'old-tool 0.9' >&2");
    program("broken-tool", "exit 3");
    probe_.cpuinfo = dir_.file("cpuinfo");
    probe_.nvidia_smi = dir_.file("no-nvidia-smi");
  }

  void program(const std::string& name, const std::string& body) {
    write_bytes(dir_.file(name), "#!/bin/sh\n" + body + "\n");
    std::filesystem::permissions(dir_.file(name), std::filesystem::perms::owner_all);
  }

  HostFingerprint probe(const std::vector<std::string>& programs) {
    return probe_host(programs, dir_.path().string(), probe_);
  }

  TempDir dir_;
  ProbeOptions probe_;
};

TEST_F(HostTest, RecordsWhatItFindsAndMarksTheRestAbsent) {
  HostFingerprint h = probe({"./tool", "./old-tool", "./broken-tool", "./missing", "./tool"});
  EXPECT_EQ(h.cpu_model, "Test CPU 9000");
  EXPECT_EQ(h.logical_cpus, 3);
  EXPECT_FALSE(h.gpus.has_value());  // no nvidia-smi: absent, not "no GPU"
  ASSERT_EQ(h.tools.size(), 4u);
  EXPECT_EQ(h.tools.at("./tool"), "tool 2.1 (built today)");  // the first non-empty line
  EXPECT_EQ(h.tools.at("./old-tool"), "old-tool 0.9");        // answered on stderr
  EXPECT_FALSE(h.tools.at("./broken-tool").has_value());
  EXPECT_FALSE(h.tools.at("./missing").has_value());
  EXPECT_EQ(h.slug(), "test-cpu-9000-3cpu");
  DeviceFingerprint d = h.device();
  EXPECT_EQ(d.backend, "host");
  EXPECT_EQ(d.name, "Test CPU 9000");
  EXPECT_EQ(d.sm_count, 3);
  EXPECT_EQ(d.extra.at("gpus"), "absent");
  EXPECT_EQ(d.extra.at("tool:./old-tool"), "old-tool 0.9");
  EXPECT_EQ(d.extra.at("tool:./missing"), "absent");
}

TEST_F(HostTest, GpusComeFromNvidiaSmiAndAnAnswerInAnotherFormatIsAbsent) {
  program("nvidia-smi", "echo 'NVIDIA H200, 143771'; echo 'NVIDIA H200, 143771'");
  probe_.nvidia_smi = dir_.file("nvidia-smi");
  HostFingerprint g = probe({});
  ASSERT_TRUE(g.gpus.has_value());
  ASSERT_EQ(g.gpus->size(), 2u);
  EXPECT_EQ(g.gpus->at(0).name, "NVIDIA H200");
  EXPECT_EQ(g.gpus->at(0).memory_mib, 143771u);
  EXPECT_EQ(g.slug(), "nvidia-h200-3cpu");
  EXPECT_EQ(g.device().name, "Test CPU 9000 / NVIDIA H200 / NVIDIA H200");
  EXPECT_EQ(g.device().memory_bytes, 2 * 143771ull * 1024 * 1024);

  program("nvidia-smi", "echo 'No devices were found'");
  EXPECT_FALSE(probe({}).gpus.has_value());
  program("nvidia-smi", "true");
  EXPECT_EQ(probe({}).gpus, std::vector<GpuInfo>{});  // it answered and found none
}

TEST_F(HostTest, DifferencesNameEachItemThatChanged) {
  HostFingerprint recorded = probe({"./tool", "./old-tool"});
  EXPECT_TRUE(fingerprint_differences(recorded, probe({"./tool", "./old-tool"})).empty());
  HostFingerprint here = recorded;
  here.cpu_model = "Other CPU";
  here.logical_cpus.reset();
  here.tools["./tool"] = "tool 2.2";
  here.tools.erase("./old-tool");
  here.tools["./new-tool"] = std::nullopt;
  EXPECT_EQ(fingerprint_differences(recorded, here),
            (std::vector<std::string>{
                "cpu_model: 'Test CPU 9000' recorded, 'Other CPU' here",
                "logical_cpus: 3 recorded, absent here",
                "tool ./old-tool: 'old-tool 0.9' recorded, absent here",
                "tool ./tool: 'tool 2.1 (built today)' recorded, 'tool 2.2' here",
                "tool ./new-tool: not recorded, absent here",
            }));
}

}  // namespace
}  // namespace attune::platform
