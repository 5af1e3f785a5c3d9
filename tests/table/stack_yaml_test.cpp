// The tuned stack file as a rendering of a Table: the text byte for byte (the format issue 6
// wrote, which `stack run` and users' scripts read), a failed baseline, the refusal of a row a
// tuned file must never ship, and the loader reading back what was written.
#include "table/stack_yaml.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace attune::table {
namespace {

Problem provider(const std::string& name) {
  return Problem("stack", {{"stack", "demo"}, {"provider", name}, {"records", "8"}},
                 "demo/" + name);
}

// A provider's notes: 8 records, its defaults, the knobs it ends with and how many configs ran.
StackProviderNotes notes(const std::string& name, const std::string& baseline_config,
                         std::vector<std::pair<std::string, std::string>> knobs, int evaluated) {
  StackProviderNotes n;
  n.name = name;
  n.problem = provider(name);
  n.records = 8;
  n.baseline_config = baseline_config;
  n.knobs = std::move(knobs);
  n.evaluated = evaluated;
  return n;
}

struct Fixture {
  Table table;
  StackNotes notes;
};

Fixture demo() {
  Fixture f;
  f.notes.stack = "demo";
  f.notes.seed = 5;
  f.notes.repeats = 3;
  f.notes.host.cpu_model = "Test CPU 9000";
  f.notes.host.logical_cpus = 2;
  f.notes.host.gpus = std::vector<platform::GpuInfo>{{"NVIDIA H200", 143771}};
  f.notes.host.tools["./encoder.sh"] = "toy-encoder 0.3";
  f.table.attune_version = "9.9.9";
  f.table.device = f.notes.host.device();
  OpTable ops;
  ops.op = "stack";
  ops.dtype = std::string(kNoDtype);
  Row row;
  row.problem = provider("encoder");
  row.backend = "command";
  row.config = "batch=4";
  row.median_us = 1e6 / 200;   // 200 records/s
  row.baseline_us = 1e6 / 50;  // 50 records/s
  row.baseline_config = "batch=1";
  row.error = ErrorCheck{"output_digest_differs", 0, 0};
  ops.rows.push_back(row);
  f.table.ops.push_back(ops);

  StackProviderNotes encoder = notes("encoder", "batch=1", {{"batch", "4"}}, 3);
  encoder.rejected = {
      {"batch=8", "telltale", "telltale 'X' in stderr (exit code 0) on the warm-up"}};
  f.notes.providers.push_back(encoder);

  StackProviderNotes broken = notes("broken", "mode=a", {{"mode", "a"}}, 1);
  broken.baseline_failure = "crash: exit code 1; stderr: 'no model' on the warm-up";
  broken.rejected = {{"mode=a", "crash", "exit code 1; stderr: 'no model' on the warm-up"}};
  f.notes.providers.push_back(broken);
  return f;
}

TEST(StackYaml, TheTunedFileIsTheFormatStackRunReads) {
  Fixture f = demo();
  auto y = to_stack_yaml(f.table, f.notes);
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_EQ(*y,
            "# attune stack tune: the tuned knobs for this machine.\n"
            "# `attune stack run STACK --tuned THIS_FILE` applies them only where the fingerprint "
            "matches.\n"
            "\n"
            "stack: demo\n"
            "attune_version: 9.9.9\n"
            "seed: 5\n"
            "repeats: 3\n"
            "fingerprint:\n"
            "  cpu_model: Test CPU 9000\n"
            "  logical_cpus: 2\n"
            "  gpus:\n"
            "    - {name: NVIDIA H200, memory_mib: 143771}\n"
            "  tools:\n"
            "    ./encoder.sh: toy-encoder 0.3\n"
            "providers:\n"
            "  - name: encoder\n"
            "    status: tuned\n"
            "    knobs: {batch: \"4\"}\n"
            "    config: batch=4\n"
            "    records: 8\n"
            "    baseline_records_per_second: 50\n"
            "    tuned_records_per_second: 200\n"
            "    speedup: 4\n"
            "    evaluated: 3\n"
            "    rejected:\n"
            "      - config: batch=8\n"
            "        reason: telltale\n"
            "        detail: telltale 'X' in stderr (exit code 0) on the warm-up\n"
            "  - name: broken\n"
            "    status: baseline_failed\n"
            "    knobs: {mode: \"a\"}\n"
            "    config: mode=a\n"
            "    records: 8\n"
            "    baseline_failure: \"crash: exit code 1; stderr: 'no model' on the warm-up\"\n"
            "    evaluated: 1\n"
            "    rejected:\n"
            "      - config: mode=a\n"
            "        reason: crash\n"
            "        detail: \"exit code 1; stderr: 'no model' on the warm-up\"\n");
  EXPECT_EQ(stack_status(f.table, f.notes.providers[0]), "tuned");
  EXPECT_EQ(stack_status(f.table, f.notes.providers[1]), "baseline_failed");

  const std::string path =
      (std::filesystem::temp_directory_path() / "attune-stack-yaml-test.yaml").string();
  std::ofstream(path) << *y;
  auto t = load_tuned_stack(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->stack, "demo");
  EXPECT_TRUE(platform::fingerprint_differences(t->fingerprint, f.notes.host).empty());
  ASSERT_NE(t->provider("encoder"), nullptr);
  EXPECT_EQ(t->provider("encoder")->knobs.at("batch"), "4");
  EXPECT_EQ(t->provider("broken")->knobs.at("mode"), "a");
}

TEST(StackYaml, ARowSlowerThanItsBaselineOrFailingTheGateIsNeverShipped) {
  Fixture f = demo();
  f.table.ops[0].rows[0].median_us = f.table.ops[0].rows[0].baseline_us * 2;
  auto slow = to_stack_yaml(f.table, f.notes);
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message().find("slower than its baseline"), std::string::npos);

  f = demo();
  f.table.ops[0].rows[0].error.value = 1;
  auto wrong = to_stack_yaml(f.table, f.notes);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("correctness gate"), std::string::npos);
}

}  // namespace
}  // namespace attune::table
