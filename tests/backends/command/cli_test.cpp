// `attune stack` as a user runs it: exit codes, the default tuned-file path, bad input writing
// nothing, the fingerprint guard of `stack run`, and `attune eval` over the stack's rows.
// Skips while the attune binary has no stack command (main.cpp wires it).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/command/fixtures.h"
#include "store/store.h"
#include "support/run.h"

namespace attune::command {
namespace {

using attune::testing::run_attune;
using testing::kFakeProvider;
using testing::read_file;
using testing::write_file;
namespace fs = std::filesystem;

class StackCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(ATTUNE_BINARY).empty()) GTEST_SKIP() << "no attune binary in this build";
    // `attune stack --help` exits 0 even without the command (CLI11 prints the main help), so
    // look for the subcommand in the list.
    if (run_attune("--help", dir_.path()).out.find("\n  stack ") == std::string::npos)
      GTEST_SKIP() << "this attune binary has no stack command yet";
    write_file(dir_ / "records.txt", "alpha\nbeta\ngamma\n");
    write_file(dir_ / "stack.yaml",
               "stack: demo\n"
               "telltales: [BackendCompilerFailed]\n"
               "providers:\n"
               "  - name: encoder\n"
               "    command: [\"" +
                   kFakeProvider +
                   "\", \"--profile\", \"{variant}\", \"--in\", \"{sample}\","
                   " \"--state\", \"" +
                   (dir_ / "state") +
                   "\"]\n"
                   "    knobs: {variant: [medium, fast, wrong, telltale]}\n"
                   "    defaults: {variant: medium}\n"
                   "    sample: {file: records.txt, records: 2}\n"
                   "    timeout_s: 10\n");
  }
  testing::TempDir dir_;
};

TEST_F(StackCli, TuneWritesTheTunedFileAndTheDatabaseThenRunAppliesIt) {
  auto r = run_attune("--json stack tune stack.yaml --repeats 1 --anchor-every 0", dir_.path());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& p = j["providers"][0];
  EXPECT_EQ(p["tuned"]["config"], "variant=fast");
  EXPECT_EQ(p["baseline"]["config"], "variant=medium");
  EXPECT_EQ(p["rejected"].size(), 2u);
  EXPECT_EQ(j["device"]["backend"], "host");
  std::string tuned = j["tuned_file"];
  EXPECT_EQ(fs::path(tuned).parent_path(), fs::path(dir_.path()) / "tuned");
  EXPECT_EQ(fs::path(tuned).extension(), ".yaml");
  EXPECT_NE(read_file(tuned).find("variant: \"fast\""), std::string::npos);

  auto variants = run_attune("--json eval variants --kernel stack", dir_.path());
  ASSERT_EQ(variants.code, 0) << variants.err;
  auto v = nlohmann::json::parse(variants.out);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0]["config"], "variant=fast");  // best first: fewest microseconds per record
  EXPECT_EQ(v[0]["problem"], "demo/encoder");
  auto failures = run_attune("--json eval failures --kernel demo/encoder", dir_.path());
  ASSERT_EQ(failures.code, 0) << failures.err;
  EXPECT_EQ(nlohmann::json::parse(failures.out).size(), 2u);  // crashed (telltale), wrong_output

  auto run = run_attune("stack run stack.yaml --workdir work --tuned " + tuned, dir_.path());
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "ok:alpha\nok:beta\n");
  EXPECT_NE(run.err.find("ran variant=fast (tuned)"), std::string::npos) << run.err;
  EXPECT_TRUE(fs::is_directory(dir_ / "work/encoder"));  // kept for the user to read

  // Without --workdir the run's directory is made under the temporary directory and removed.
  fs::create_directories(dir_ / "tmp");
  auto plain = run_attune("stack run stack.yaml --tuned " + tuned, dir_.path(),
                          "TMPDIR='" + dir_ / "tmp" + "'");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "left in the temporary directory";
  EXPECT_NE(plain.err.find("--workdir DIR keeps it"), std::string::npos) << plain.err;

  std::string text = read_file(tuned);
  auto at = text.find("logical_cpus: ");
  ASSERT_NE(at, std::string::npos);
  write_file(dir_ / "elsewhere.yaml",
             text.replace(at, text.find('\n', at) - at, "logical_cpus: 999"));
  auto other =
      run_attune("stack run stack.yaml --workdir work --tuned elsewhere.yaml", dir_.path());
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_NE(other.err.find("was tuned on another machine (logical_cpus: 999 recorded"),
            std::string::npos)
      << other.err;
  EXPECT_NE(other.err.find("ran variant=medium (defaults)"), std::string::npos) << other.err;
}

TEST_F(StackCli, BadInputExitsTwoAndWritesNothing) {
  std::string text = read_file(dir_ / "stack.yaml");
  auto bad = [&](const std::string& from, const std::string& to, const std::string& line) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    write_file(dir_ / "bad.yaml", t);
    auto r = run_attune("--db bad.db stack tune bad.yaml --out out.yaml", dir_.path());
    EXPECT_EQ(r.code, 2) << from << " -> " << to;
    EXPECT_EQ(r.err.rfind("attune: error: bad.yaml:" + line + ": ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "bad.db"));
    EXPECT_FALSE(fs::exists(dir_ / "out.yaml"));
    EXPECT_FALSE(fs::exists(dir_ / "tuned"));
    EXPECT_FALSE(fs::exists(dir_ / "state"));  // nothing ran
  };
  bad("timeout_s: 10", "timeout: 10", "9");                    // unknown key
  bad("[medium, fast, wrong, telltale]", "[]", "6");           // a knob with no values
  bad("variant: medium}", "variant: slow}", "7");              // default not among the values
  bad("file: records.txt", "file: missing.txt", "8");          // missing sample file
  bad("\"" + kFakeProvider + "\"", "\"./not-here.sh\"", "5");  // command that does not exist
  auto r = run_attune("stack run stack.yaml --tuned nowhere.yaml", dir_.path());
  EXPECT_EQ(r.code, 2);
  auto s = run_attune("stack tune stack.yaml --sample 7", dir_.path());
  EXPECT_EQ(s.code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "attune.db"));
}

TEST_F(StackCli, SigintKillsTheCandidateInFlightAndClosesTheRun) {
  std::string text = read_file(dir_ / "stack.yaml");
  text.replace(text.find("[medium, fast, wrong, telltale]"), 31, "[medium, hang]");
  // Only the interrupt can end the hanging candidate in time (were it not killed, this test
  // would wait out the timeout and ctest's).
  text.replace(text.find("timeout_s: 10"), 13, "timeout_s: 600");
  write_file(dir_ / "hang.yaml", text);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::chdir(dir_.path().c_str()) != 0) ::_exit(99);
    std::freopen("/dev/null", "w", stdout);
    ::execl(ATTUNE_BINARY, ATTUNE_BINARY, "stack", "tune", "hang.yaml", "--repeats", "1",
            static_cast<char*>(nullptr));
    ::_exit(98);
  }
  for (int i = 0; i < 3000 && !fs::exists(dir_ / "state/count.hang"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(dir_ / "state/count.hang"));
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  auto store = open_store(dir_ / "attune.db", false);
  ASSERT_TRUE(store.ok()) << store.error().message();
  auto runs = (*store)->runs();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->at(0).status, "interrupted");
}

TEST_F(StackCli, AFailingBaselineExitsOne) {
  // Every config runs the failing profile, the baseline included.
  std::string text = read_file(dir_ / "stack.yaml");
  text.replace(text.find("\"{variant}\""), 11, "\"fail\"");
  write_file(dir_ / "failing.yaml", text);
  auto r = run_attune("stack tune failing.yaml --repeats 1 --out failing.tuned.yaml", dir_.path());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("FAILED crash"), std::string::npos) << r.out;
  EXPECT_NE(read_file(dir_ / "failing.tuned.yaml").find("status: baseline_failed"),
            std::string::npos);
}

}  // namespace
}  // namespace attune::command
