// libattune-rt's per-call decision on a hit, on the CPU (no GPU involved): the index lookup alone,
// and the whole decision a call makes (slot probe + counter) on a realistic table: 108 exact gemm
// rows (6 projections of an 8B-class decoder x 18 token counts) and its bucketed counterpart.
// Target (issue 5): at most 50 ns per call on a hit. Results: bench/results/runtime_lookup-*.md.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "runtime/selector.h"

namespace attune::runtime {
namespace {

// (n, k) of q/o, k/v, gate/up, down, and two wider projections; m are the token counts tuned.
constexpr std::int64_t kNK[][2] = {{4096, 4096},  {1024, 4096},   {12288, 4096},
                                   {4096, 12288}, {151936, 4096}, {6144, 4096}};
constexpr std::int64_t kM[] = {1,  2,  3,  4,   6,   8,   12,   16,   24,
                               32, 48, 64, 128, 256, 512, 1024, 2048, 4096};

DeviceFingerprint device() {
  DeviceFingerprint d;
  d.backend = "cuda";
  d.name = "NVIDIA H200";
  d.arch = "sm_90a";
  d.sm_count = 132;
  d.memory_bytes = 150ull << 30;
  return d;
}

table::Row row(std::map<std::string, std::string> attrs) {
  table::Row r;
  r.problem = Problem("gemm", std::move(attrs));
  r.backend = "cuda";
  r.config =
      "kernel=tiled,tl_bm=64,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_split=1,tl_group=8";
  r.median_us = 10;
  r.baseline_us = 12;
  r.error = {"max_rel_err", 1e-3, 2e-2};
  return r;
}

// The table, written and opened the way the runtime opens one.
std::unique_ptr<Selector> open_table(bool bucketed) {
  table::Table t;
  t.attune_version = "bench";
  t.device = device();
  table::OpTable g{"gemm", "bf16", {}, {}};
  if (bucketed) g.match = {table::MatchPolicy::Kind::kBucketed, "m", "no-harm, least max regret"};
  for (auto [n, k] : kNK) {
    std::int64_t lo = 1;
    for (std::int64_t m : kM) {
      std::map<std::string, std::string> attrs = {
          {"bias", "0"}, {"dtype", "bf16"}, {"k", std::to_string(k)}, {"n", std::to_string(n)}};
      if (!bucketed) attrs["m"] = std::to_string(m);
      table::Row r = row(attrs);
      if (bucketed) r.bucket = table::Bucket{"m", lo, m, {m}};
      lo = m + 1;
      g.rows.push_back(r);
    }
  }
  t.ops.push_back(g);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("attune-bench-" + std::to_string(::getpid()) + ".json"))
                               .string();
  if (!table::save_table(t, path)) std::abort();
  auto s = Selector::open(path, device(), {});
  std::filesystem::remove(path);
  if (!s) std::abort();
  return std::move(*s);
}

// Hit queries in an order that defeats a one-entry cache; bucketed: points inside the buckets.
std::vector<ShapeKey> queries(bool bucketed) {
  std::vector<ShapeKey> q;
  const OpKind gemm = *op_kind("gemm");
  for (std::int64_t m : kM)
    for (auto [n, k] : kNK)
      q.push_back(ShapeKey{gemm, Dtype::kBf16, false, {bucketed && m > 2 ? m - 1 : m, n, k}});
  return q;
}

void BM_IndexFind(benchmark::State& state) {
  const bool bucketed = state.range(0) != 0;
  auto s = open_table(bucketed);
  const auto q = queries(bucketed);
  std::size_t i = 0;
  for (auto _ : state) {
    const IndexedRow* r = s->index().find(q[i]);
    benchmark::DoNotOptimize(r);
    if (++i == q.size()) i = 0;
  }
  if (!s->index().find(q[0])) state.SkipWithError("query missed");
  state.SetLabel(bucketed ? "bucketed, 108 rows" : "exact, 108 rows");
}
BENCHMARK(BM_IndexFind)->Arg(0)->Arg(1);

// What every call does before it launches: find its shape's slot and count the call.
void BM_SelectHit(benchmark::State& state) {
  static std::unique_ptr<Selector> shared[2];
  const bool bucketed = state.range(0) != 0;
  if (state.thread_index() == 0) {
    shared[bucketed] = open_table(bucketed);
    for (const ShapeKey& k : queries(bucketed))
      shared[bucketed]->select(k);  // first calls: outside the timing
  }
  // Google Benchmark starts every thread's loop together, after thread 0's setup above.
  const auto q = queries(bucketed);
  std::size_t i = static_cast<std::size_t>(state.thread_index()) * 7 % q.size();
  for (auto _ : state) {
    Slot& slot = shared[bucketed]->select(q[i]);
    benchmark::DoNotOptimize(slot.row.load(std::memory_order_acquire));
    if (++i == q.size()) i = 0;
  }
  if (state.thread_index() == 0) {
    if (shared[bucketed]->counters().misses != 0) state.SkipWithError("a query missed");
    state.SetLabel(bucketed ? "bucketed, 108 rows" : "exact, 108 rows");
  }
}
BENCHMARK(BM_SelectHit)->Arg(0)->Arg(1)->Threads(1)->Threads(2);

}  // namespace
}  // namespace attune::runtime

BENCHMARK_MAIN();
