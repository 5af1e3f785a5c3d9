// The CLI as a user runs it, on the simulated device.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/sim/sim_backend.h"
#include "core/op.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/sqlite_store.h"
#include "support/damage.h"
#include "support/postgres.h"
#include "support/run.h"

namespace attune {
namespace {

using testing::read_bytes;
using testing::run_attune;
using testing::TempDir;
using testing::write_bytes;

using testing::lines;

TEST(Cli, FaultsRunCompletesWithEveryFailureClassCountedThenReplaysWithNothingMeasured) {
  TempDir dir;
  auto r = run_attune("tune --backend sim --problem faults --json", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["device"]["backend"], "sim");
  EXPECT_EQ(j["run"]["strategy"], "mcts_repair");  // the default
  const auto& p = j["problems"][0];
  for (const char* v : {"ok", "unsupported", "build_failed", "launch_failed", "crashed", "timeout",
                        "oom", "wrong_output", "non_finite"})
    EXPECT_GT(p["verdicts"][v].get<int>(), 0) << v << " not counted: " << p["verdicts"].dump();
  EXPECT_EQ(p["evaluated"], 54);
  EXPECT_EQ(p["measured"], 54);
  EXPECT_EQ(p["replayed"], 0);
  EXPECT_FALSE(p["best"].is_null());
  EXPECT_GT(p["speedup"].get<double>(), 1.0);
  EXPECT_EQ(p["structural_key"].get<std::string>().size(), 16u);
  EXPECT_EQ(p["baseline"]["config"], "block=128,vec=1,unroll=1,stages=1");

  auto again = run_attune("tune --backend sim --problem faults --json", dir.path());
  ASSERT_EQ(again.code, 0) << again.err;
  auto k = nlohmann::json::parse(again.out);
  EXPECT_EQ(k["problems"][0]["measured"], 0);
  EXPECT_EQ(k["problems"][0]["replayed"], 54);
  EXPECT_EQ(k["problems"][0]["best"], p["best"]);
  EXPECT_EQ(k["problems"][0]["verdicts"], p["verdicts"]);

  // eval failures: every planted class, grouped by the knob values it was planted at.
  auto f = run_attune("eval failures --kernel faults --json", dir.path());
  ASSERT_EQ(f.code, 0) << f.err;
  auto groups = nlohmann::json::parse(f.out);
  std::set<std::string> seen;
  for (const auto& g : groups) {
    seen.insert(g["verdict"].get<std::string>());
    if (g["verdict"] == "timeout") {
      EXPECT_EQ(g["shared"],
                (nlohmann::json{{"block", "64"}, {"vec", "1"}, {"unroll", "1"}, {"stages", "2"}}));
    }
    if (g["verdict"] == "build_failed") {
      EXPECT_EQ(g["shared"], (nlohmann::json{{"vec", "4"}, {"unroll", "4"}}));
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"unsupported", "build_failed", "launch_failed", "crashed",
                                         "timeout", "oom", "wrong_output", "non_finite"}));
  auto text = run_attune("eval failures", dir.path());
  EXPECT_NE(text.out.find("block=64,vec=2,unroll=2"), std::string::npos) << text.out;

  auto v = run_attune("eval variants --problem faults --limit 3", dir.path());
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find(p["best"]["config"].get<std::string>()), std::string::npos) << v.out;
  EXPECT_EQ(lines(v.out), 5u);  // header, 3 rows, "... more"
}

TEST(Cli, MaxCandidatesDoesNotCountVariantsRefusedBeforeAnyBuild) {
  TempDir dir;
  // block=256 with vec=4 is refused before any build; the pins leave six such configs after the
  // baseline, and a budget of two candidates still goes through all of them.
  auto r = run_attune(
      "tune --backend sim --problem faults --strategy grid --patience 0 --pin block=256 --pin "
      "vec=4 "
      "--max-candidates 2 --json",
      dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto p = nlohmann::json::parse(r.out)["problems"][0];
  EXPECT_EQ(p["verdicts"]["unsupported"], 6) << p["verdicts"].dump();
  EXPECT_EQ(p["evaluated"], 7);
  EXPECT_EQ(p["stopped_by"], "exhausted");
}

TEST(Cli, GridShardsAreDisjointAndTheirUnionIsTheWholeSpace) {
  TempDir dir;
  std::multiset<std::string> configs;
  for (int i = 0; i < 3; ++i) {
    std::string db = "shard" + std::to_string(i) + ".db";
    auto r =
        run_attune("tune --backend sim --problem rmsnorm --strategy grid --patience 0 --shard " +
                       std::to_string(i) + "/3 --db " + db,
                   dir.path());
    ASSERT_EQ(r.code, 0) << r.err;
    auto store = SqliteStore::open(dir.file(db), false);
    ASSERT_TRUE(store.ok());
    MeasurementQuery q;
    q.regime = Regime::kRank;
    std::set<std::string> mine;
    auto rows = (*store)->measurements(q);
    ASSERT_TRUE(rows.ok());
    for (const auto& row : rows.value()) mine.insert(row.config);
    // Each shard also measures the baseline, the reference for its speedup.
    mine.erase("threads=256,rows_per_block=1,vec=1,unroll=1");
    configs.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(configs.size(), 215u);  // 216 configs less the baseline, each exactly once
  EXPECT_EQ(std::set<std::string>(configs.begin(), configs.end()).size(), configs.size());
}

TEST(Cli, DeviceAndProblems) {
  TempDir dir;
  auto d = run_attune("device --backend sim --json", dir.path());
  ASSERT_EQ(d.code, 0) << d.err;
  auto j = nlohmann::json::parse(d.out);
  EXPECT_EQ(j["sm_count"], 132);
  EXPECT_EQ(j["key"].get<std::string>().size(), 16u);
  auto p = run_attune("problems --backend sim", dir.path());
  ASSERT_EQ(p.code, 0);
  for (const char* name : {"faults", "gemm", "rmsnorm", "attention_decode", "attention_prefill"})
    EXPECT_NE(p.out.find(name), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));  // listing creates no database
}

// attention_decode as a user tunes it without a GPU: --op/--shape on the sim, the split baseline
// measured first, and a tuned best within a few percent of the landscape's known optimum (deploy
// regime: the optimum's time times its cold-L2 factor, plus sampling noise).
TEST(Cli, AttentionDecodeTunesOnTheSimToNearItsOptimum) {
  TempDir dir;
  for (const char* shape : {"1x16384x128x32x8x1", "32x4096x128x32x8x1"}) {
    SCOPED_TRACE(shape);
    auto r = run_attune(std::string("tune --backend sim --op attention_decode --shape ") + shape +
                            " --patience 100 --seed 3 --json",
                        dir.path());
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out)["problems"][0];
    EXPECT_EQ(j["baseline"]["config"],
              "kernel=split,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1,combine=kernel");
    SimBackend sim;
    auto spec = problem_from_shape("attention_decode", shape, "");
    ASSERT_TRUE(spec.ok());
    const Problem p = *sim.resolve(spec->text());
    const auto opt = *sim.optimum(p);
    const double opt_deploy = *sim.true_time_us(p, opt.first, Regime::kDeploy);
    const double best = j["best"]["median_us"];
    EXPECT_LT(best, 1.05 * opt_deploy) << j["best"]["config"] << " vs " << opt.first.text();
    EXPECT_GT(j["speedup"].get<double>(), 1.5);
  }
}

// attention_prefill as a user tunes it without a GPU: --op/--shape
// (SEQxBATCHxHEADxQ_HEADSxKV_HEADS) on the sim, the split baseline measured first, every config of
// the small space measured
// (--patience 0) and the best the landscape's optimum.
TEST(Cli, AttentionPrefillTunesOnTheSimToItsOptimum) {
  TempDir dir;
  auto r = run_attune(
      "tune --backend sim --op attention_prefill --shape 4096x1x128x32x8 --patience 0 --json",
      dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["problems"][0];
  EXPECT_EQ(j["baseline"]["config"],
            "kernel=split,block_n=128,consumers=2,stages=2,overlap=1,blocks_per_sm=1");
  SimBackend sim;
  const Problem p =
      *sim.resolve(problem_from_shape("attention_prefill", "4096x1x128x32x8", "")->text());
  EXPECT_EQ(j["measured"].get<int>(), static_cast<int>(sim.space(p)->count()));
  EXPECT_EQ(j["best"]["config"], sim.optimum(p)->first.text());
  EXPECT_GT(j["speedup"].get<double>(), 3.0);
}

TEST(Cli, DevicesAreListedAndOneIsChosenByIndex) {
  TempDir dir;
  auto one = run_attune("device --backend sim --list", dir.path());
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(lines(one.out), 1u) << one.out;
  EXPECT_EQ(one.out.rfind("0  attune simulated GPU  sim_90  132 SMs  80.0 GiB  key ", 0), 0u)
      << one.out;

  const std::string two = "ATTUNE_SIM_DEVICES=2";
  auto listed = run_attune("device --backend sim --list --json", dir.path(), two);
  ASSERT_EQ(listed.code, 0) << listed.err;
  auto j = nlohmann::json::parse(listed.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["index"], 1);
  EXPECT_EQ(j[1]["key"], j[0]["key"]);  // two GPUs of one kind
  EXPECT_EQ(run_attune("device --backend sim --device 1", dir.path(), two).code, 0);
  auto beyond = run_attune("device --backend sim --device 2", dir.path(), two);
  EXPECT_EQ(beyond.code, 2);
  EXPECT_NE(beyond.err.find("has 2 devices (indexes 0..1), not device 2"), std::string::npos)
      << beyond.err;

  // The tuner's workers run every candidate on the device chosen.
  auto tuned = run_attune("tune --backend sim --problem rmsnorm --max-candidates 3 --device 1",
                          dir.path(), two + " ATTUNE_SIM_TRACE=trace");
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  const std::string trace = read_bytes(dir.file("trace"));
  EXPECT_GE(lines(trace), 3u) << trace;
  std::size_t on_one = 0;
  for (std::size_t at = 0; (at = trace.find("device=1 ", at)) != std::string::npos; ++at) ++on_one;
  EXPECT_EQ(on_one, lines(trace)) << trace;
}

using testing::BadInput;

class CliBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInput, OneLineExitTwoAndTheDatabaseUntouched) {
  TempDir dir;
  ASSERT_EQ(run_attune("tune --backend sim --problem rmsnorm --max-candidates 3", dir.path()).code,
            0);
  testing::expect_refused(GetParam(), dir, "attune.db");
}

INSTANTIATE_TEST_SUITE_P(
    Cli, CliBadInput,
    ::testing::Values(
        BadInput{"tune --backend sim --problem rmsnorm --frobnicate", "frobnicate"},
        BadInput{"tune --backend sim --problem rmsnorm --patience -1", "--patience -1 is negative"},
        BadInput{"tune --backend sim --problem rmsnorm --strategy grid --shard 3/2",
                 "--shard '3/2'"},
        BadInput{"tune --backend sim --problem rmsnorm --strategy grid --shard x", "--shard 'x'"},
        BadInput{"tune --backend sim --problem 'gemm:m'", "not of the form key=value"},
        BadInput{"tune --backend sim --problem conv", "no problem 'conv'"},
        BadInput{"tune --backend sim --op gemm --shape 4x4", "MxNxK"},
        // An op no signature registers is refused, never taken for another op.
        BadInput{"tune --backend sim --op conv --shape 4x4",
                 "--shape is understood for --op gemm (MxNxK), rmsnorm (ROWSxHIDDEN), "
                 "attention_decode (BATCHxKVxHEADxQ_HEADSxKV_HEADSxQ_LEN), attention_prefill "
                 "(SEQxBATCHxHEADxQ_HEADSxKV_HEADS), rope "
                 "(BATCHxSEQxKVxQ_HEADSxKV_HEADSxHEADxTHETA), silu_mul (ROWSxINTER) and "
                 "gemm_rope (BATCHxSEQxKVxQ_HEADSxKV_HEADSxHEADxTHETAxHIDDEN), not 'conv'"},
        BadInput{"tune --backend warp9 --problem rmsnorm", "unknown backend 'warp9'"},
        BadInput{"tune --backend sim --problem rmsnorm --strategy luck", "unknown strategy 'luck'"},
        BadInput{"tune --backend sim --shapes missing.txt",
                 "shapes file missing.txt does not exist"},
        BadInput{"eval variants --kernel conv", "no problem or op named 'conv'"},
        BadInput{"tune --backend sim", "nothing to tune"},
        BadInput{"verify missing.json", "table missing.json does not exist"},
        BadInput{"verify attune.db", "not a complete JSON document"},
        BadInput{"verify --band 0 attune.db", "--band must be a positive fraction"},
        BadInput{"verify --band-floor-us -1 attune.db", "--band-floor-us must be >= 0"},
        BadInput{"verify --retries -1 attune.db", "--retries: Value -1 not in range 0 to 100"},
        BadInput{"tune --backend sim --problem rmsnorm --device 1",
                 "has 1 device (index 0), not device 1"},
        BadInput{"device --backend sim --device 3", "has 1 device (index 0), not device 3"},
        BadInput{"tune --backend sim --problem rmsnorm --device -1", "'-1' is not a device index"},
#ifdef ATTUNE_WITH_POSTGRES
        // A server that is not there: named, its password elided.
        BadInput{
            "tune --backend sim --problem rmsnorm --db postgresql://tuner:pw@127.0.0.1:1/attune",
            "cannot connect to the PostgreSQL database postgresql://tuner:***@127.0.0.1:1/attune"},
#else
        BadInput{"tune --backend sim --problem rmsnorm --db postgresql://db/attune",
                 "this attune was built without PostgreSQL support"},
#endif
        // An output that is the database (or what the command reads) is refused before any
        // byte of it is written.
        BadInput{"tune --backend sim --problem rmsnorm --trace attune.db",
                 "--trace attune.db is the tuning database (--db attune.db); refusing to "
                 "overwrite it"},
        BadInput{"export --format json -o ./attune.db",
                 "-o ./attune.db is the tuning database (--db attune.db)"},
        BadInput{"export --format kernel-tuner --problem rmsnorm -o attune.db",
                 "-o attune.db is the tuning database"},
        BadInput{"report -o attune.db", "-o attune.db is the tuning database"},
        BadInput{"export --format json --from-sweep .",
                 "--from-sweep . is a directory, not a file"},
        BadInput{"tune --backend sim --op gemm --shape 99999999999x64x64",
                 "m=99999999999 is more than 1048576"},
        BadInput{"--bogus", "unknown flag '--bogus' before the command"},
        BadInput{"eval bogus",
                 "unknown subcommand 'bogus' of attune eval; its subcommands are: "
                 "variants, failures"},
        BadInput{"prior fit --reservoir 0", "the reservoir must hold at least 24 rows"},
        BadInput{"tune --backend sim --problem rmsnorm --pin threads=32 --pin threads=64",
                 "--pin pins threads twice (32 and 64)"},
        BadInput{"eval variants --problem rmsnorm --device nosuch",
                 "--device nosuch: no such device in attune.db"},
        BadInput{"stack tune .", ".: the stack file is a directory"},
        BadInput{"tune --backend sim --problem rmsnorm --dtype fp16",
                 "--dtype goes with --op/--shape"},
        BadInput{"export --format json --bucket m --bucket-edges ''",
                 "--bucket-edges: an empty value"},
        BadInput{"prior fit --name ''", "--name: an empty value"},
        BadInput{"ab --ref true --cand true --metric ''", "--metric: an empty value"},
        BadInput{"ab --ref true --cand true --higher-is-better",
                 "--higher-is-better goes with --metric NAME"},
        BadInput{"worker --backend sim --devices 0,0", "--devices 0,0 names device 0 twice"},
        BadInput{"tune --backend sim --problem rmsnorm --trace no/such/dir/t.csv",
                 "--trace no/such/dir/t.csv: cannot write the file (No such file or directory)"}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      return "case" + std::to_string(info.index);
    });

TEST(Cli, CorruptAndForeignDatabasesAreRefusedAndLeftAlone) {
  TempDir dir;
  write_bytes(dir.file("notes.db"), "my notes\n");
  auto r = run_attune("tune --backend sim --problem rmsnorm --db notes.db", dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("not an SQLite database"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.file("notes.db")), "my notes\n");

  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(dir.file("other.db").c_str(), &raw), SQLITE_OK);
    sqlite::Db db{sqlite::DbHandle(raw)};
    ASSERT_TRUE(db.exec("CREATE TABLE users (name TEXT)").ok());
  }
  const std::string before = read_bytes(dir.file("other.db"));
  auto f = run_attune("eval failures --db other.db", dir.path());
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("another program"), std::string::npos) << f.err;
  EXPECT_EQ(read_bytes(dir.file("other.db")), before);

  auto missing = run_attune("eval failures --db nowhere.db", dir.path());
  EXPECT_EQ(missing.code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.file("nowhere.db")));
}

// A database with a damaged page took writes from import: now every command that opens it is
// refused in one line with exit 2, and the file is left as it was.
TEST(Cli, ADatabaseWithADamagedPageIsRefusedBeforeAnyWrite) {
  TempDir dir;
  ASSERT_EQ(
      run_attune("tune --backend sim --problem faults --strategy grid --patience 0", dir.path())
          .code,
      0);
  ASSERT_TRUE(testing::damage_table_page(dir.file("attune.db"), "measurements"));
  const std::string before = read_bytes(dir.file("attune.db"));
  const std::string cache = std::string(ATTUNE_SOURCE_DIR) + "/tests/backends/fixtures/tiny.json";
  for (const std::string& args :
       {"import kernel-tuner '" + cache + "' --name tiny",
        std::string("tune --backend sim --problem rmsnorm --max-candidates 2")}) {
    auto r = run_attune(args, dir.path());
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("attune.db is damaged ("), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("refusing to write to it"), std::string::npos) << r.err;
    EXPECT_EQ(read_bytes(dir.file("attune.db")), before) << args;
  }
}

TEST(Cli, AShapesFileSpecTheBackendRefusesIsNamedByFileAndLine) {
  TempDir dir;
  write_bytes(dir.file("shapes.txt"), "# mine\nrmsnorm:rows=4,hidden=1024\n\ngemm:m=0,n=1,k=1\n");
  auto r = run_attune("tune --backend sim --shapes shapes.txt", dir.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("attune: error: shapes.txt:4: ", 0), 0u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));
}

TEST(Cli, ADatabaseMissingATableOrColumnIsRefusedBeforeAnyWrite) {
  TempDir dir;
  ASSERT_EQ(run_attune("tune --backend sim --problem rmsnorm --max-candidates 3", dir.path()).code,
            0);
  for (const auto& [sql, what] :
       {std::pair<std::string, std::string>{"DROP TABLE measurements",
                                            "without table measurements"},
        {"ALTER TABLE measurements DROP COLUMN verdict", "without column measurements.verdict"}}) {
    std::filesystem::copy_file(dir.file("attune.db"), dir.file("hurt.db"),
                               std::filesystem::copy_options::overwrite_existing);
    {
      sqlite3* raw = nullptr;
      ASSERT_EQ(sqlite3_open(dir.file("hurt.db").c_str(), &raw), SQLITE_OK);
      sqlite::Db db{sqlite::DbHandle(raw)};
      ASSERT_TRUE(db.exec(sql).ok()) << sql;
    }
    const std::string before = read_bytes(dir.file("hurt.db"));
    auto r = run_attune("tune --backend sim --problem rmsnorm --max-candidates 2 --db hurt.db",
                        dir.path());
    EXPECT_EQ(r.code, 2) << sql;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("hurt.db is a damaged attune database (schema v"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_EQ(read_bytes(dir.file("hurt.db")), before) << sql;
  }
}

// The same refusal on a PostgreSQL database: one line, exit 2, no run recorded.
TEST(Cli, APostgresDatabaseMissingATableOrColumnIsRefusedBeforeAnyWrite) {
#ifndef ATTUNE_WITH_POSTGRES
  GTEST_SKIP() << "this attune is built without its PostgreSQL store";
#else
  for (const auto& [sql, what] :
       {std::pair<std::string, std::string>{"DROP TABLE measurements",
                                            "without table measurements"},
        {"ALTER TABLE measurements DROP COLUMN verdict", "without column measurements.verdict"}}) {
    TempDir dir;
    testing::TestDatabase db;
    ATTUNE_NEED_POSTGRES(db);
    const std::string tune =
        "tune --backend sim --problem rmsnorm --max-candidates 2 --db '" + db.url() + "'";
    ASSERT_EQ(run_attune(tune, dir.path()).code, 0);
    db.exec(sql);
    auto runs = [&] {
      pqxx::connection c(db.url());
      pqxx::nontransaction tx(c);
      return tx.exec1("SELECT count(*) FROM runs")[0].as<std::int64_t>();
    };
    const std::int64_t before = runs();
    auto r = run_attune(tune, dir.path());
    EXPECT_EQ(r.code, 2) << sql << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(" is a damaged attune database (schema v"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_EQ(runs(), before) << sql;
  }
#endif
}

TEST(Cli, ADatabaseThisUserCannotWriteIsReadByReadersAndRefusedByTuners) {
  TempDir dir;
  ASSERT_EQ(run_attune("tune --backend sim --problem rmsnorm --max-candidates 3", dir.path()).code,
            0);
  // Root writes whatever the mode bits say, so as root the commands run as nobody (the database
  // and its directory are root's); otherwise both are made read-only.
  std::string as;
  if (::geteuid() == 0) {
    if (std::system("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "no setpriv";
    as = "setpriv --reuid=65534 --regid=65534 --clear-groups";
  } else {
    std::filesystem::permissions(dir.file("attune.db"), std::filesystem::perms::owner_read |
                                                            std::filesystem::perms::group_read |
                                                            std::filesystem::perms::others_read);
    std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::remove);
  }
  const std::string before = read_bytes(dir.file("attune.db"));
  auto exported = run_attune("export --format json", dir.path(), as);
  EXPECT_EQ(exported.code, 0) << exported.err;
  EXPECT_NE(exported.out.find("\"attune_version\""), std::string::npos) << exported.out;
  auto listed = run_attune("eval variants --problem rmsnorm", dir.path(), as);
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("threads="), std::string::npos) << listed.out;
  auto tuned =
      run_attune("tune --backend sim --problem rmsnorm --max-candidates 2", dir.path(), as);
  EXPECT_EQ(tuned.code, 2);
  EXPECT_EQ(lines(tuned.err), 1u) << tuned.err;
  EXPECT_NE(tuned.err.find("attune.db cannot be written by this user"), std::string::npos)
      << tuned.err;
  EXPECT_EQ(read_bytes(dir.file("attune.db")), before);
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
}

// A negative schema version crashed every command (exit 139, no message).
TEST(Cli, AnOutOfRangeSchemaVersionIsOneLineAndExitTwo) {
  TempDir dir;
  ASSERT_EQ(run_attune("tune --backend sim --problem rmsnorm --max-candidates 2", dir.path()).code,
            0);
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(dir.file("attune.db").c_str(), &raw), SQLITE_OK);
    sqlite::Db db{sqlite::DbHandle(raw)};
    ASSERT_TRUE(db.exec("UPDATE attune_schema SET version = -3").ok());
  }
  testing::expect_refused({"eval failures", "schema version -3 is not one any attune writes"}, dir,
                          "attune.db");
}

TEST(Cli, AnOlderDatabaseIsMigratedAndKeepsItsRows) {
  TempDir dir;
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(dir.file("attune.db").c_str(), &raw), SQLITE_OK);
    sqlite::Db db{sqlite::DbHandle(raw)};
    ASSERT_TRUE(db.exec("PRAGMA application_id = " + std::to_string(sqlite::kApplicationId)).ok());
    ASSERT_TRUE(sqlite::migrate(db, 0, 1).ok());
    ASSERT_TRUE(db.exec("INSERT INTO runs (command, arguments, started_at, status) VALUES ('tune', "
                        "'[]', 't', 'done')")
                    .ok());
  }
  auto r = run_attune("tune --backend sim --problem rmsnorm --max-candidates 2", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  auto store = SqliteStore::open(dir.file("attune.db"));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(*sqlite::schema_version((*store)->db()), sqlite::current_schema_version());
  EXPECT_EQ((*store)->runs()->size(), 2u);
}

// One request delivered twice in quick succession (the process, then its group, as `timeout` and
// schedulers do) is one request: the run still ends with its report, exit 130. Two signals sent
// while attune is stopped are both delivered, back to back, when it continues.
TEST(Cli, ASignalDeliveredTwiceIsOneRequest) {
  TempDir dir;
  std::string cmd =
      "cd '" + dir.path().string() + "' && ('" + ATTUNE_BINARY +
      "' --db t.db --json tune --backend sim --problem faults --strategy grid "
      "--timeout 30 > t.json 2> t.err & p=$!; sleep 1.5; kill -STOP $p; kill -TERM $p; "
      "kill -INT $p; kill -CONT $p; wait $p; echo $? > t.rc)";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_bytes(dir.file("t.rc")), "130\n") << read_bytes(dir.file("t.err"));
  auto t = nlohmann::json::parse(read_bytes(dir.file("t.json")));
  EXPECT_EQ(t["problems"][0]["stopped_by"], "interrupted");
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// Logs stay on stderr: a drifting device's warnings must not break --json on stdout.
TEST(Cli, DriftWarningsGoToStderrAndTheJsonStaysClean) {
  TempDir dir;
  auto r = run_attune(
      "tune --backend sim --problem rmsnorm --strategy grid --patience 0 --max-candidates 12 "
      "--anchor-every 2 --backoff 0.001 --json",
      dir.path(), "ATTUNE_SIM_DRIFT=5:14:1.5");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);  // throws (fails the test) if anything else is on stdout
  EXPECT_GE(j["problems"][0]["drift_events"].get<int>(), 1);
  EXPECT_GT(j["problems"][0]["discarded"].get<int>(), 0);
  EXPECT_NE(r.err.find("moved +50.0%"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// --strategy-option: a bad name or value is one line, exit 2, the database untouched.
INSTANTIATE_TEST_SUITE_P(
    StrategyOptions, CliBadInput,
    ::testing::Values(
        BadInput{"tune --backend sim --problem rmsnorm --strategy-option explore=1",
                 "known: exploration, value_power, incumbent_bias, incumbent_tail, neighbour_bias, "
                 "initial_samples, "
                 "first_play"},
        BadInput{
            "tune --backend sim --problem rmsnorm --strategy grid --strategy-option population=3",
            "grid has no such option (known: none)"},
        BadInput{"tune --backend sim --problem rmsnorm --strategy genetic --strategy-option "
                 "population=many",
                 "population=many"},
        BadInput{"tune --backend sim --problem rmsnorm --strategy-option exploration=-1",
                 "out of range"},
        BadInput{"tune --backend sim --problem rmsnorm --strategy-option exploration",
                 "must be NAME=VALUE"}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      return "case" + std::to_string(info.index);
    });

TEST(Cli, StrategyOptionsReachTheStrategyAndHelpListsThem) {
  TempDir dir;
  auto help = run_attune("tune --strategy genetic --strategy-option help", dir.path());
  ASSERT_EQ(help.code, 0) << help.err;
  for (const char* name : {"population", "elite", "tournament", "mutation"})
    EXPECT_NE(help.out.find(name), std::string::npos) << help.out;
  EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));

  // The configs a run visits, in order, from its -v log.
  auto visited = [&](const std::string& db, const std::string& options) {
    auto r = run_attune(
        "tune --backend sim --problem gemm --strategy genetic --patience 0 --max-candidates 10 -v "
        "--db " +
            db + " " + options,
        dir.path());
    EXPECT_EQ(r.code, 0) << r.err;
    std::string configs;
    std::istringstream log(r.err);
    for (std::string line; std::getline(log, line);) {
      auto from = line.find("] "), to = line.find(" -> ");
      if (line.rfind("info [gemm", 0) == 0 && from < to && to != std::string::npos)
        configs += line.substr(from + 2, to - from - 2) + "\n";
    }
    return configs;
  };
  const std::string plain = visited("a.db", "");
  const std::string small =
      visited("b.db", "--strategy-option population=3 --strategy-option elite=1");
  EXPECT_FALSE(plain.empty());
  EXPECT_NE(plain, small);
  EXPECT_EQ(small, visited("c.db", "--strategy-option population=3 --strategy-option elite=1"));
}

// Issue 13, item 10: input that was accepted or garbled.
TEST(Cli, BadNumbersAndUnknownCommandsAreOneLineAndExitTwo) {
  TempDir dir;
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"tune --backend sim --problem faults --deploy-band nan", "not a finite number"},
           {"tune --backend sim --problem faults --time-limit inf", "not a finite number"},
           {"tune --backend sim --problem faults --seed -1", "not a whole number"},
           {"tune --backend sim --problem faults --timeout nan", "not a finite number"},
           {"tnue --backend sim",
            "unknown command 'tnue'; the commands are: device, problems, tune"},
       }) {
    auto r = run_attune(args, dir.path());
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << args << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("attune.db")));  // nothing was created
}

TEST(Cli, ControlCharactersFromAFileAreEscapedAndTheMessageStaysOneLine) {
  TempDir dir;
  {
    std::ofstream f(dir.file("shapes.txt"));
    f << "gemm:m=1,\x1b[31mn=\r\n=2\x07\n";
  }
  auto r = run_attune("tune --backend sim --shapes shapes.txt", dir.path());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
}

// --time-limit and SIGTERM end tune with its whole report on --json.
TEST(Cli, ATimeLimitAndSigtermBothEndWithTheWholeJsonReport) {
  TempDir dir;
  auto start = std::chrono::steady_clock::now();
  // grid reaches the planted hang (block=64,vec=1,unroll=1,stages=2) early; each try of it costs
  // the 1.5 s timeout.
  auto r = run_attune(
      "--json tune --backend sim --problem faults --problem rmsnorm --strategy grid --timeout 1.5 "
      "--time-limit 1",
      dir.path());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["problems"].size(), 2u);
  EXPECT_EQ(j["problems"][0]["stopped_by"], "time_limit");
  EXPECT_LT(j["problems"][0]["evaluated"].get<int>(), 54);
  EXPECT_EQ(j["problems"][1]["stopped_by"], "time_limit");
  EXPECT_EQ(j["report_version"], 2);
  EXPECT_LT(wall, 1 + 1.5 + 2.0);  // the limit, one candidate, and process start-up

  // SIGTERM (a scheduler's deadline) while a candidate hangs: the report still comes, exit 130.
  std::string cmd = "cd '" + dir.path().string() + "' && (timeout --preserve-status -s TERM 2 '" +
                    ATTUNE_BINARY +
                    "' --db t.db --json tune --backend sim --problem faults --strategy grid "
                    "--timeout 30 > term.json 2> term.err; echo $? > term.rc)";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_bytes(dir.file("term.rc")), "130\n") << read_bytes(dir.file("term.err"));
  auto t = nlohmann::json::parse(read_bytes(dir.file("term.json")));
  EXPECT_TRUE(t["run"]["interrupted"].get<bool>());
  EXPECT_EQ(t["problems"][0]["stopped_by"], "interrupted");
  auto store = open_store(dir.file("t.db"), false);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->runs()->at(0).status, "interrupted");
}

// The rows of a CSV text (RFC 4180 quoting), each a list of fields.
std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::exchange(field, ""));
    } else if (c == '\n') {
      row.push_back(std::exchange(field, ""));
      rows.push_back(std::exchange(row, {}));
    } else {
      field += c;
    }
  }
  return rows;
}

// The configs of a trace's rows, in order.
std::vector<std::string> traced_configs(const std::string& trace) {
  std::vector<std::string> configs;
  auto rows = csv_rows(trace);
  for (std::size_t i = 1; i < rows.size(); ++i) configs.push_back(rows[i].at(4));
  return configs;
}

// Issue 15: --trace writes every evaluation as the run goes, in the columns search_replay's
// --traces uses where they overlap.
TEST(Cli, TheTraceHasOneRowPerEvaluatedCandidateAndTheBestSoFarNeverRises) {
  TempDir dir;
  auto r =
      run_attune("tune --backend sim --problem faults --seed 3 --json --trace t.csv", dir.path());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto p = nlohmann::json::parse(r.out)["problems"][0];
  const auto rows = csv_rows(read_bytes(dir.file("t.csv")));
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"problem", "strategy", "seed", "evaluation", "config",
                                      "verdict", "time_us", "best_us", "replayed", "new_best"}));
  ASSERT_EQ(static_cast<std::int64_t>(rows.size()) - 1, p["evaluated"].get<std::int64_t>());
  EXPECT_EQ(rows[1][4], p["baseline"]["config"]);
  std::optional<double> best;
  int new_bests = 0;
  std::set<std::string> configs;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    ASSERT_EQ(row.size(), 10u) << i;
    EXPECT_EQ(row[0], "faults");
    EXPECT_EQ(row[1], "mcts_repair");
    EXPECT_EQ(row[2], "3");
    EXPECT_EQ(row[3], std::to_string(i));
    EXPECT_TRUE(configs.insert(row[4]).second) << row[4] << " twice";
    EXPECT_EQ(row[6].empty(), row[5] != "ok") << i;
    EXPECT_EQ(row[8], "0");  // a fresh database: everything measured
    if (row[9] == "1") {
      ++new_bests;
      EXPECT_EQ(row[7], row[6]) << i;
    }
    if (row[7].empty()) {
      EXPECT_FALSE(best) << "best_us empty after one passed, at " << i;
      continue;
    }
    const double b = std::stod(row[7]);
    if (best) {
      EXPECT_LE(b, *best) << i;
    }
    EXPECT_EQ(row[9] == "1", !best || b < *best) << i;
    best = b;
  }
  EXPECT_GT(new_bests, 0);

  // The same search again is answered from the database: the same rows, replayed.
  auto again =
      run_attune("tune --backend sim --problem faults --seed 3 --trace t2.csv", dir.path());
  ASSERT_EQ(again.code, 0) << again.err;
  const auto replayed = csv_rows(read_bytes(dir.file("t2.csv")));
  ASSERT_EQ(replayed.size(), rows.size());
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(replayed[i][4], rows[i][4]);
    EXPECT_EQ(replayed[i][8], "1");
  }
}

// A run killed outright keeps the rows it traced: each is flushed when written.
TEST(Cli, AKilledRunLeavesTheTraceOfWhatItEvaluated) {
  TempDir dir;
  // grid reaches the planted hang early; the kill comes while it runs (the 30 s timeout).
  std::string cmd = "cd '" + dir.path().string() + "' && (timeout -s KILL 3 '" + ATTUNE_BINARY +
                    "' tune --backend sim --problem faults --strategy grid --timeout 30 "
                    "--trace t.csv > out 2> err; echo $? > rc)";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_bytes(dir.file("rc")), "137\n") << read_bytes(dir.file("err"));
  const auto rows = csv_rows(read_bytes(dir.file("t.csv")));
  ASSERT_GE(rows.size(), 2u) << read_bytes(dir.file("t.csv"));  // the header and the baseline
  EXPECT_EQ(rows[1][4], "block=128,vec=1,unroll=1,stages=1");
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].size(), 10u) << i;
}

// Issue 15: a second run with another seed on the same database replayed the first run (its
// stored results came first, then its tree was continued) and said nothing of it.
TEST(Cli, ASecondSeedSaysItContinuedAndFreshSearchProposesAfresh) {
  TempDir dir;
  // small_space=0: the sim's rmsnorm (216 configs) would go to the surrogate, which keeps no
  // tree; this is about a tree that is continued.
  const std::string tune =
      "tune --backend sim --problem rmsnorm --patience 20 --strategy-option small_space=0 --json ";
  auto first = run_attune(tune + "--seed 1 --trace one.csv", dir.path());
  ASSERT_EQ(first.code, 0) << first.err;
  const auto a = nlohmann::json::parse(first.out);
  EXPECT_EQ(a["problems"][0]["continued"], false);
  EXPECT_TRUE(a["problems"][0]["continued_from"].is_null());

  auto second = run_attune(tune + "--seed 2", dir.path());
  ASSERT_EQ(second.code, 0) << second.err;
  const auto b = nlohmann::json::parse(second.out)["problems"][0];
  EXPECT_EQ(b["continued"], true);
  EXPECT_EQ(b["continued_from"]["state"], true);
  EXPECT_EQ(b["continued_from"]["stored_results"],
            a["problems"][0]["evaluated"].get<int>() - 1);  // all but the baseline
  EXPECT_EQ(b["continued_from"]["runs"], nlohmann::json::array({a["run"]["id"]}));
  auto text = run_attune(
      "tune --backend sim --problem rmsnorm --patience 20 --strategy-option small_space=0 --seed 2",
      dir.path());
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("  continued: mcts_repair's stored search state and "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("(--fresh-search starts a new search)\n"), std::string::npos);

  // --fresh-search proposes what seed 2 proposes on an empty database; the stored results
  // answer the configs they cover.
  auto fresh = run_attune(tune + "--seed 2 --fresh-search --trace fresh.csv", dir.path());
  ASSERT_EQ(fresh.code, 0) << fresh.err;
  const auto c = nlohmann::json::parse(fresh.out)["problems"][0];
  EXPECT_EQ(c["continued"], false);
  EXPECT_TRUE(c["continued_from"].is_null());
  EXPECT_GT(c["replayed"].get<int>(), 0);  // the baseline at least
  auto alone = run_attune(tune + "--seed 2 --db alone.db --trace alone.csv", dir.path());
  ASSERT_EQ(alone.code, 0) << alone.err;
  const auto fresh_order = traced_configs(read_bytes(dir.file("fresh.csv")));
  EXPECT_EQ(fresh_order, traced_configs(read_bytes(dir.file("alone.csv"))));
  EXPECT_NE(fresh_order, traced_configs(read_bytes(dir.file("one.csv"))));
  EXPECT_EQ(c["evaluated"], nlohmann::json::parse(alone.out)["problems"][0]["evaluated"]);

  auto help = run_attune("tune --help", dir.path());
  EXPECT_NE(help.out.find("--fresh-search"), std::string::npos) << help.out;
}

TEST(Cli, TheTextReportSaysAtWhichEvaluationTheBestWasFound) {
  TempDir dir;
  auto json = run_attune("tune --backend sim --problem faults --json --db a.db", dir.path());
  ASSERT_EQ(json.code, 0) << json.err;
  const auto p = nlohmann::json::parse(json.out)["problems"][0];
  ASSERT_TRUE(p["best_at"].is_number());
  auto text = run_attune("tune --backend sim --problem faults --db b.db", dir.path());
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("  best found at evaluation " + std::to_string(p["best_at"].get<int>()) +
                          " of " + std::to_string(p["evaluated"].get<int>()) + "\n"),
            std::string::npos)
      << text.out;
}

// The op's first guesses are counted in both reports: attention_decode at one sequence over a
// deep cache gets its KV-split guesses, and a grid walk none.
TEST(Cli, TheReportsCountTheOpsFirstGuesses) {
  TempDir dir;
  const std::string tune =
      "tune --backend sim --problem attention_decode:batch=1,kv=16384,head=128 --max-candidates 8 ";
  auto json = run_attune(tune + "--json --db a.db", dir.path());
  ASSERT_EQ(json.code, 0) << json.err;
  const auto p = nlohmann::json::parse(json.out)["problems"][0];
  EXPECT_EQ(p["first_guesses"], 4);
  auto text = run_attune(tune + "--db b.db", dir.path());
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("  first guesses: 4 of the op's, evaluated after the baseline\n"),
            std::string::npos)
      << text.out;
  auto grid = run_attune(tune + "--strategy grid --json --db c.db", dir.path());
  ASSERT_EQ(grid.code, 0) << grid.err;
  EXPECT_EQ(nlohmann::json::parse(grid.out)["problems"][0]["first_guesses"], 0);
}

// grid is offered beside the searches; its help says it is not one.
TEST(Cli, GridsHelpSaysItWalksTheSpaceInOrderAndIgnoresTheSeed) {
  TempDir dir;
  const std::string says = "grid walks the space in enumeration order";
  auto help = run_attune("tune --help", dir.path());
  ASSERT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find(says), std::string::npos) << help.out;
  auto options = run_attune("tune --strategy grid --strategy-option help", dir.path());
  ASSERT_EQ(options.code, 0) << options.err;
  EXPECT_NE(options.out.find(says), std::string::npos) << options.out;
  EXPECT_NE(options.out.find("ignores --seed"), std::string::npos) << options.out;
}

}  // namespace
}  // namespace attune
