#include "backends/command/stack_file.h"

#include <gtest/gtest.h>

#include "backends/command/fixtures.h"

namespace attune::command {
namespace {

using testing::kFakeProvider;
using testing::TempDir;
using testing::write_file;

// A valid stack; each bad-input test breaks one line of it. Line numbers are 1-based.
std::string good_stack() {
  return "stack: demo\n"                                        // 1
         "telltales: [BackendCompilerFailed, InductorError]\n"  // 2
         "providers:\n"                                         // 3
         "  - name: encoder\n"                                  // 4
         "    command: [\"" +
         kFakeProvider +
         "\", \"--profile\", \"{variant}\", \"--in\", \"{sample}\"]\n"  // 5
         "    env: {ENCODER_THREADS: \"{threads}\"}\n"                  // 6
         "    knobs:\n"                                                 // 7
         "      variant: [base, fast]\n"                                // 8
         "      threads: [1, 2, 4]\n"                                   // 9
         "    defaults: {variant: base, threads: 1}\n"                  // 10
         "    constraints: [\"threads <= 2 or variant == 'fast'\"]\n"   // 11
         "    sample: {file: records.jsonl, records: 2}\n"              // 12
         "    throughput: records_per_second\n"                         // 13
         "    output: {stdout: true}\n"                                 // 14
         "    timeout_s: 5\n";                                          // 15
}

class StackFileTest : public ::testing::Test {
 protected:
  void SetUp() override { write_file(dir_ / "records.jsonl", "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"); }

  // Loads `text` (good_stack with `from` replaced by `to`); returns the error message.
  std::string error_of(const std::string& from, const std::string& to) {
    std::string text = good_stack();
    auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    write_file(dir_ / "stack.yaml", text);
    auto s = load_stack(dir_ / "stack.yaml");
    EXPECT_FALSE(s.ok()) << "accepted:\n" << text;
    if (s.ok()) return "";
    EXPECT_EQ(s.error().kind(), Error::Kind::kInvalidArgument);
    return s.error().message();
  }
  std::string where(int line) { return dir_ / ("stack.yaml:" + std::to_string(line) + ": "); }

  TempDir dir_;
};

TEST_F(StackFileTest, ReadsAValidStack) {
  write_file(dir_ / "stack.yaml", good_stack());
  auto s = load_stack(dir_ / "stack.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->name, "demo");
  EXPECT_EQ(s->telltales, (std::vector<std::string>{"BackendCompilerFailed", "InductorError"}));
  ASSERT_EQ(s->providers.size(), 1u);
  const Provider& p = s->providers[0];
  EXPECT_EQ(p.name, "encoder");
  EXPECT_EQ(p.line, 4);
  EXPECT_EQ(p.space.depth(), 2u);
  EXPECT_EQ(p.space.knobs()[0].name, "variant");  // file order
  EXPECT_EQ(p.space.config(p.space.baseline()).text(), "variant=base,threads=1");
  EXPECT_EQ(p.space.count(), 5u);  // base with threads 4 is pruned by the constraint
  EXPECT_EQ(p.sample.records, 2);
  EXPECT_EQ(p.sample.available, 3);
  EXPECT_DOUBLE_EQ(p.timeout_s, 5);
  EXPECT_EQ(p.env.at("ENCODER_THREADS"), "{threads}");
  auto vars = p.vars(p.space.baseline(), "/s", "/w");
  EXPECT_EQ(vars.at("variant"), "base");
  EXPECT_EQ(vars.at("sample"), "/s");
  EXPECT_EQ(substitute("--in={sample} {{literal}}", vars).value(), "--in=/s {literal}");
}

TEST_F(StackFileTest, UnknownKeysAreErrorsWithTheirLine) {
  EXPECT_EQ(
      error_of("telltales:", "telltale:"),
      where(2) + "unknown key 'telltale' in the stack file (allowed: stack, telltales, providers)");
  EXPECT_EQ(error_of("    timeout_s: 5", "    timeout: 5")
                .rfind(where(15) + "unknown key 'timeout' in a provider", 0),
            0u);
  EXPECT_EQ(
      error_of("records: 2}", "records: 2, lines: 3}").rfind(where(12) + "unknown key 'lines'", 0),
      0u);
}

TEST_F(StackFileTest, AKnobWithNoValues) {
  EXPECT_EQ(error_of("threads: [1, 2, 4]", "threads: []"),
            where(9) + "provider 'encoder': knob 'threads' has no values");
}

TEST_F(StackFileTest, ADefaultThatIsNotAmongTheKnobsValues) {
  EXPECT_EQ(
      error_of("threads: 1}", "threads: 3}"),
      where(10) +
          "provider 'encoder': default '3' of knob 'threads' is not among its values [1, 2, 4]");
  EXPECT_EQ(error_of("defaults: {variant: base, threads: 1}", "defaults: {variant: base}"),
            where(9) + "provider 'encoder': knob 'threads' has no default (add it to 'defaults')");
}

TEST_F(StackFileTest, AMissingSampleFile) {
  std::string e = error_of("file: records.jsonl", "file: nowhere.jsonl");
  EXPECT_EQ(
      e.rfind(where(12) + "provider 'encoder': sample file 'nowhere.jsonl' does not exist", 0), 0u)
      << e;
}

TEST_F(StackFileTest, ACommandThatDoesNotExist) {
  std::string e = error_of(kFakeProvider, dir_ / "no-such-program");
  EXPECT_EQ(e.rfind(where(5) + "provider 'encoder': program '", 0), 0u) << e;
  EXPECT_NE(e.find("does not exist or is not executable"), std::string::npos) << e;
  e = error_of("\"" + kFakeProvider + "\"", "no-such-program-on-path");
  EXPECT_EQ(
      e, where(5) + "provider 'encoder': program 'no-such-program-on-path' is not found on PATH");
}

TEST_F(StackFileTest, OtherBadInputNamesTheLine) {
  EXPECT_EQ(error_of("\"{variant}\"", "\"{varient}\"")
                .rfind(where(5) + "provider 'encoder': '{varient}' names placeholder {varient}", 0),
            0u);
  EXPECT_EQ(error_of("threads <= 2", "thread <= 2")
                .rfind(where(11) + "provider 'encoder': constraint", 0),
            0u);
  EXPECT_EQ(error_of("records: 2}", "records: 9}"),
            where(12) + "provider 'encoder': records asks for 9 but 'records.jsonl' holds 3");
  EXPECT_EQ(error_of("throughput: records_per_second", "throughput: {regex: \"rps=[0-9]+\"}")
                .rfind(where(13), 0),
            0u);
  EXPECT_EQ(error_of("output: {stdout: true}", "output: {stdout: false}").rfind(where(14), 0), 0u);
  EXPECT_EQ(error_of("timeout_s: 5", "timeout_s: -1").rfind(where(15), 0), 0u);
  EXPECT_EQ(error_of("variant: [base, fast]", "variant: [base, base]").rfind(where(8), 0), 0u);
  EXPECT_EQ(error_of("  - name: encoder", "  - name: enc oder").rfind(where(4), 0), 0u);
  EXPECT_EQ(error_of("providers:\n", "providers: [\n").rfind(dir_ / "stack.yaml:", 0), 0u);
}

TEST(StackFile, AMissingStackFile) {
  auto s = load_stack("/nonexistent/stack.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "/nonexistent/stack.yaml:1: the stack file does not exist");
}

}  // namespace
}  // namespace attune::command
