// stack run and the machine fingerprint: tuned knobs are applied only where the tuned file's
// fingerprint matches this machine; a mismatch (or no tuned file) runs the defaults.
#include "core/files.h"
#include "runtime/stack/apply.h"

#include <gtest/gtest.h>

#include "backends/command/fixtures.h"
#include "table/formats.h"
#include "tune/stack.h"

namespace attune::runtime {
namespace {

using command::load_stack;
using command::Rejection;
using command::StackFile;
using command::testing::kFakeProvider;
using command::testing::read_file;
using command::testing::TempDir;
using command::testing::TempStore;
using command::testing::write_file;
using platform::fingerprint_differences;
using platform::HostFingerprint;
using platform::probe_host;
using platform::ProbeOptions;
using table::load_tuned_stack;

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(dir_ / "records.txt", "alpha\nbeta\n");
    write_file(dir_ / "cpuinfo",
               "processor\t: 0\nmodel name\t: Test CPU 9000\n\nprocessor\t: 1\n"
               "model name\t: Test CPU 9000\n");
    write_file(dir_ / "stack.yaml",
               "stack: demo\n"
               "providers:\n"
               "  - name: encoder\n"
               "    command: [\"" +
                   kFakeProvider +
                   "\", \"--profile\", \"{variant}\", \"--in\", \"{sample}\"]\n"
                   "    knobs: {variant: [medium, fast, wrong]}\n"
                   "    defaults: {variant: medium}\n"
                   "    sample: {file: records.txt}\n");
    auto s = load_stack(dir_ / "stack.yaml");
    ASSERT_TRUE(s.ok()) << s.error().message();
    stack_ = *s;
    probe_.cpuinfo = dir_ / "cpuinfo";
    probe_.nvidia_smi = dir_ / "no-nvidia-smi";
  }

  // Tunes the stack on "this machine" and writes the tuned file.
  std::string tune_and_write() {
    StackTuneOptions o;
    o.command.repeats = 1;
    o.tuning.drift.anchor_every = 0;
    TempStore store;
    auto r = tune_stack(stack_, probe_host(stack_.programs(), stack_.dir, probe_), *store, o);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(table::stack_row(r->table, r->notes.providers[0])->config, "variant=fast");
    std::string path = dir_ / "machine.yaml";
    auto yaml = table::to_stack_yaml(r->table, r->notes);
    EXPECT_TRUE(yaml.ok());
    EXPECT_TRUE(write_text_file(path, *yaml).ok());
    return path;
  }

  StackRun run_with(const TunedStack* tuned) {
    RunOptions o;
    o.tuned = tuned;
    o.workdir_root = dir_ / "work";
    auto r = run_stack(stack_, probe_host(stack_.programs(), stack_.dir, probe_), o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : StackRun{};
  }

  TempDir dir_;
  StackFile stack_;
  ProbeOptions probe_;
};

TEST_F(RunTest, TheFingerprintRecordsWhatItFindsAndMarksTheRestAbsent) {
  HostFingerprint h = probe_host(stack_.programs(), stack_.dir, probe_);
  EXPECT_EQ(h.cpu_model, "Test CPU 9000");
  EXPECT_EQ(h.logical_cpus, 2);
  EXPECT_FALSE(h.gpus.has_value());  // no nvidia-smi: absent, not "no GPU"
  ASSERT_EQ(h.tools.size(), 1u);
  EXPECT_EQ(h.tools.at(kFakeProvider), "fake-provider 1.0");
  EXPECT_EQ(h.slug(), "test-cpu-9000-2cpu");
  EXPECT_EQ(h.device().backend, "host");
  EXPECT_EQ(h.device().sm_count, 2);

  // A GPU where nvidia-smi answers.
  write_file(dir_ / "nvidia-smi",
             "#!/bin/sh\necho 'NVIDIA H200, 143771'\necho 'NVIDIA H200, 143771'\n");
  std::filesystem::permissions(dir_ / "nvidia-smi", std::filesystem::perms::owner_all);
  ProbeOptions with_gpu = probe_;
  with_gpu.nvidia_smi = dir_ / "nvidia-smi";
  HostFingerprint g = probe_host(stack_.programs(), stack_.dir, with_gpu);
  ASSERT_TRUE(g.gpus.has_value());
  ASSERT_EQ(g.gpus->size(), 2u);
  EXPECT_EQ(g.gpus->at(0).name, "NVIDIA H200");
  EXPECT_EQ(g.gpus->at(0).memory_mib, 143771u);
  EXPECT_EQ(g.slug(), "nvidia-h200-2cpu");
  EXPECT_EQ(fingerprint_differences(h, g).size(), 1u);
  EXPECT_TRUE(
      fingerprint_differences(h, probe_host(stack_.programs(), stack_.dir, probe_)).empty());
}

TEST_F(RunTest, TheTunedFileReadsBackAsWritten) {
  std::string path = tune_and_write();
  auto t = load_tuned_stack(path);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->stack, "demo");
  EXPECT_TRUE(
      fingerprint_differences(t->fingerprint, probe_host(stack_.programs(), stack_.dir, probe_))
          .empty());
  ASSERT_EQ(t->providers.size(), 1u);
  EXPECT_EQ(t->providers[0].knobs.at("variant"), "fast");
  EXPECT_TRUE(check_tuned(stack_, *t).ok());
}

TEST_F(RunTest, AMatchingMachineRunsTheTunedKnobs) {
  auto t = load_tuned_stack(tune_and_write());
  ASSERT_TRUE(t.ok());
  StackRun run = run_with(&*t);
  EXPECT_TRUE(run.fingerprint_matched);
  ASSERT_EQ(run.providers.size(), 1u);
  EXPECT_TRUE(run.providers[0].tuned);
  EXPECT_EQ(run.providers[0].label, "variant=fast");
  EXPECT_TRUE(run.ok());
  EXPECT_EQ(run.providers[0].process.out, "ok:alpha\nok:beta\n");
  EXPECT_EQ(run.providers[0].workdir, dir_ / "work/encoder");
}

TEST_F(RunTest, AMismatchedFingerprintIsRefusedAndTheDefaultsRun) {
  std::string path = tune_and_write();
  std::string text = read_file(path);
  auto at = text.find("Test CPU 9000");
  ASSERT_NE(at, std::string::npos);
  write_file(path, text.replace(at, 13, "Other CPU 123"));
  auto t = load_tuned_stack(path);
  ASSERT_TRUE(t.ok());
  StackRun run = run_with(&*t);
  EXPECT_FALSE(run.fingerprint_matched);
  ASSERT_EQ(run.mismatches.size(), 1u);
  EXPECT_EQ(run.mismatches[0], "cpu_model: 'Other CPU 123' recorded, 'Test CPU 9000' here");
  EXPECT_FALSE(run.providers[0].tuned);
  EXPECT_EQ(run.providers[0].label, "variant=medium");
}

TEST_F(RunTest, AToolVersionChangeIsAMismatch) {
  std::string path = tune_and_write();
  std::string text = read_file(path);
  auto at = text.find("fake-provider 1.0");
  ASSERT_NE(at, std::string::npos);
  write_file(path, text.replace(at, 17, "fake-provider 2.0"));
  auto t = load_tuned_stack(path);
  ASSERT_TRUE(t.ok());
  StackRun run = run_with(&*t);
  EXPECT_FALSE(run.fingerprint_matched);
  EXPECT_EQ(run.providers[0].label, "variant=medium");
}

TEST_F(RunTest, WithoutATunedFileTheDefaultsRun) {
  StackRun run = run_with(nullptr);
  EXPECT_FALSE(run.tuned_given);
  EXPECT_EQ(run.providers[0].label, "variant=medium");
  EXPECT_TRUE(run.ok());
}

TEST_F(RunTest, ATunedFileForAnotherStackOrWithUnknownKnobsIsBadInput) {
  std::string path = tune_and_write();
  std::string text = read_file(path);
  std::string bad = text;
  bad.replace(bad.find("variant: \"fast\""), 15, "variant: \"turbo\"");
  write_file(dir_ / "bad.yaml", bad);
  auto t = load_tuned_stack(dir_ / "bad.yaml");
  ASSERT_TRUE(t.ok());
  auto s = check_tuned(stack_, *t);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message().rfind(dir_ / "bad.yaml:", 0), 0u) << s.error().message();
  EXPECT_NE(s.error().message().find("knob 'variant' has no value 'turbo'"), std::string::npos);

  bad = text;
  bad.replace(bad.find("stack: demo"), 11, "stack: other");
  write_file(dir_ / "other.yaml", bad);
  t = load_tuned_stack(dir_ / "other.yaml");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(check_tuned(stack_, *t).ok());
  RunOptions o;
  o.tuned = &*t;
  auto r = run_stack(stack_, probe_host(stack_.programs(), stack_.dir, probe_), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), Error::Kind::kInvalidArgument);

  write_file(dir_ / "garbage.yaml", "stack: demo\nfingerprint: [\n");
  auto g = load_tuned_stack(dir_ / "garbage.yaml");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message().rfind(dir_ / "garbage.yaml:", 0), 0u);
}

TEST_F(RunTest, AFailingProviderMakesTheRunFail) {
  StackFile failing = stack_;
  failing.providers[0].command = {kFakeProvider, "--profile", "fail", "--in", "{sample}"};
  RunOptions o;
  o.workdir_root = dir_ / "work2";
  auto r = run_stack(failing, probe_host(failing.programs(), failing.dir, probe_), o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ok());
  ASSERT_TRUE(r->providers[0].failure);
  EXPECT_EQ(*r->providers[0].failure, Rejection::kCrash);
}

}  // namespace
}  // namespace attune::runtime
