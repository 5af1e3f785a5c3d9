// attention_decode's kernel plans: the split-KV flash decoding kernel (and its combine of the
// splits), and the split baseline (scores by a cuBLASLt batched GEMM, a softmax kernel, the value
// GEMM), both launched over the layout of attention_decode_op.cpp; the split form is
// attention_prefill's baseline too (split_attention_plan).
#include <fmt/format.h>

#include <algorithm>

#include "kernels/plan.h"
#include "kernels/plan_knobs.h"

namespace attune::kernels {

extern const char* const kAttentionDecodeFlashSource;
extern const char* const kAttentionDecodeSoftmaxSource;
extern const char* const kClusterHeader;

namespace {

// Output rows per block of the combine kernel (one warp each).
constexpr unsigned kCombineRows = 4;
constexpr unsigned kSoftmaxThreads = 256;
// What cuBLASLt may use in the split baseline: as much as the gemm family gives it, less; the
// batched GEMMs of decode are small, and the heuristic's first choice for them needed none on
// the H100 class.
constexpr std::size_t kSplitLtWorkspace = 4u << 20;
// The largest grid.y and grid.z CUDA launches.
constexpr std::int64_t kMaxGridYz = 65535;
// combine=cluster: the splits of a row group are one thread block cluster, at most 16 blocks:
// Hopper's non-portable cluster size. Past the portable 8 the launch (cuda::check_launch, the
// tuner's and libattune-rt's) opts the kernel in and refuses it where the device cannot run such
// a cluster.
constexpr std::int64_t kMaxClusterSplits = 16;

std::size_t align256(std::size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

// The split partials of either flash kernel: merged by attn_decode_combine.
void add_combine(const AttentionDecodeShape& s, std::int64_t splits, KernelPlan* p) {
  const auto rows = static_cast<std::size_t>(s.rows());
  p->workspace_bytes = static_cast<std::size_t>(splits) * rows * (s.head + 2) * sizeof(float);
  p->build.name_expressions.push_back("attn_decode_combine");
  p->steps.push_back({"attn_decode_combine",
                      {ceil_div(s.rows(), kCombineRows)},
                      {32 * kCombineRows},
                      0,
                      {"o", "workspace", "rows"}});
}

Result<Plan> plan_flash(const AttentionDecodeShape& s, const Config& c) {
  ATTUNE_ASSIGN(std::int64_t splits, knob(c, "splits"));
  ATTUNE_ASSIGN(std::int64_t kv_tile, knob(c, "kv_tile"));
  ATTUNE_ASSIGN(std::int64_t warps, knob(c, "warps"));
  ATTUNE_ASSIGN(std::int64_t vec, knob(c, "vec"));
  ATTUNE_ASSIGN(std::int64_t q_rows, knob(c, "q_rows"));
  const std::int64_t lanes_per_key = std::min<std::int64_t>(32, s.head / vec);
  if (kv_tile % (warps * (32 / lanes_per_key)) != 0)
    return Error::invalid_argument(fmt::format(
        "attention_decode config '{}': kv_tile is not a multiple of the keys a block's warps load "
        "at once ({})",
        c.text(), warps * (32 / lanes_per_key)));
  const std::int64_t groups = (s.group() * s.q_len + q_rows - 1) / q_rows;
  if (groups > kMaxGridYz || s.batch * s.kv_heads > kMaxGridYz)
    return Error::invalid_argument(
        fmt::format("attention_decode: {} row groups of {} KV heads exceed a launch's grid", groups,
                    s.batch * s.kv_heads));
  KernelPlan p;
  p.build.source = kAttentionDecodeFlashSource;
  p.build.source_name = "attention_decode_flash.cu";
  p.build.headers = {launch_header()};
  p.build.options = {
      fmt::format("-DT={}", type_of(s.bf16)), fmt::format("-DHEAD={}", s.head),
      fmt::format("-DGROUP={}", s.group()),   fmt::format("-DQ_LEN={}", s.q_len),
      fmt::format("-DSPLITS={}", splits),     fmt::format("-DKV_TILE={}", kv_tile),
      fmt::format("-DWARPS={}", warps),       fmt::format("-DVEC={}", vec),
      fmt::format("-DQ_ROWS={}", q_rows),     fmt::format("-DCOMBINE_ROWS={}", kCombineRows)};
  p.build.name_expressions = {"attn_decode_flash"};
  p.steps.push_back({"attn_decode_flash",
                     {static_cast<unsigned>(splits), static_cast<unsigned>(groups),
                      static_cast<unsigned>(s.batch * s.kv_heads)},
                     {static_cast<unsigned>(warps * 32)},
                     0,
                     {"o", "workspace", "q", "k", "v", "kv"}});
  // Each split's unnormalized output rows, then its (max, sum) per row, all fp32.
  if (splits > 1) add_combine(s, splits, &p);
  return Plan{std::move(p)};
}

}  // namespace

namespace {

// The tensor-core form: a block per (split, 16 or 32 query rows, sequence x KV head).
Result<Plan> plan_mma(const AttentionDecodeShape& s, const Config& c) {
  ATTUNE_ASSIGN(std::int64_t splits, knob(c, "splits"));
  ATTUNE_ASSIGN(std::int64_t kv_tile, knob(c, "kv_tile"));
  ATTUNE_ASSIGN(std::int64_t warps, knob(c, "warps"));
  const std::int64_t q_rows = knob_or(c, "q_rows", 1);
  if (q_rows != 1 && q_rows != 32)
    return Error::invalid_argument(fmt::format(
        "attention_decode config '{}': kernel=mma takes q_rows 1 (an m16 tile of rows per block) "
        "or 32 (two)",
        c.text()));
  const std::int64_t block_rows = attention_decode_mma_block_rows(q_rows);
  const Value* combine = c.get("combine");
  if (!combine)
    return Error::invalid_argument(
        fmt::format("attention_decode config '{}' has no knob 'combine'", c.text()));
  const bool cluster = combine->as_word() == "cluster";
  if (!cluster && combine->as_word() != "kernel")
    return Error::invalid_argument(
        fmt::format("attention_decode config '{}': combine is kernel or cluster", c.text()));
  if (cluster && (splits < 2 || splits > kMaxClusterSplits))
    return Error::invalid_argument(fmt::format(
        "attention_decode config '{}': combine=cluster merges 2-{} splits in one thread block "
        "cluster",
        c.text(), kMaxClusterSplits));
  if (kv_tile % 16 != 0)
    return Error::invalid_argument(fmt::format(
        "attention_decode config '{}': kernel=mma needs kv_tile a multiple of 16", c.text()));
  const std::size_t shared = attention_decode_mma_shared_bytes(s.head, kv_tile, warps, block_rows);
  if (shared > kMaxBlockSharedBytes)
    return Error::invalid_argument(fmt::format(
        "attention_decode config '{}': {} bytes of shared memory, more than a block gets ({})",
        c.text(), shared, kMaxBlockSharedBytes));
  const std::int64_t groups = ceil_div(s.group() * s.q_len, block_rows);
  if (groups > kMaxGridYz || s.batch * s.kv_heads > kMaxGridYz)
    return Error::invalid_argument(
        fmt::format("attention_decode: {} row groups of {} KV heads exceed a launch's grid", groups,
                    s.batch * s.kv_heads));
  KernelPlan p;
  p.build.source = kAttentionDecodeFlashSource;
  p.build.source_name = "attention_decode_flash.cu";
  p.build.options = {"-DMMA=1",
                     fmt::format("-DT={}", type_of(s.bf16)),
                     fmt::format("-DHEAD={}", s.head),
                     fmt::format("-DGROUP={}", s.group()),
                     fmt::format("-DQ_LEN={}", s.q_len),
                     fmt::format("-DSPLITS={}", splits),
                     fmt::format("-DKV_TILE={}", kv_tile),
                     fmt::format("-DWARPS={}", warps),
                     fmt::format("-DSTAGES={}", attention_decode_mma_stages(s.head, kv_tile)),
                     fmt::format("-DMTILES={}", block_rows / 16),
                     fmt::format("-DCOMBINE_ROWS={}", kCombineRows),
                     fmt::format("-DCLUSTER={}", cluster ? 1 : 0)};
  p.build.headers = {launch_header(), {"attune_cluster.cuh", kClusterHeader}};
  p.build.name_expressions = {"attn_decode_mma"};
  p.steps.push_back({"attn_decode_mma",
                     {static_cast<unsigned>(splits), static_cast<unsigned>(groups),
                      static_cast<unsigned>(s.batch * s.kv_heads)},
                     {static_cast<unsigned>(warps * 32)},
                     static_cast<unsigned>(shared),
                     {"o", "workspace", "q", "k", "v", "kv"}});
  if (splits > 1 && !cluster) add_combine(s, splits, &p);
  return Plan{std::move(p)};
}

}  // namespace

ChainPlan split_attention_plan(const SplitAttention& a) {
  const std::int64_t gl = a.group_rows;
  const auto rows = static_cast<std::size_t>(a.rows), kv = static_cast<std::size_t>(a.keys);
  const std::size_t scores = align256(rows * kv * sizeof(float));
  const std::size_t probs = align256(rows * kv * 2);
  ChainPlan p;
  p.build.source = kAttentionDecodeSoftmaxSource;
  p.build.source_name = "attention_decode_softmax.cu";
  p.build.headers = {launch_header()};
  p.build.options = {fmt::format("-DT={}", type_of(a.bf16)), fmt::format("-DHEAD={}", a.head),
                     fmt::format("-DQ_LEN={}", a.q_len),
                     fmt::format("-DTHREADS={}", kSoftmaxThreads)};
  p.build.name_expressions = {"attn_decode_softmax"};
  // S = Q . K^T per (sequence, KV head): the group's query rows are contiguous in q.
  LtMatmul qk;
  qk.m = gl;
  qk.n = a.keys;
  qk.k = a.head;
  qk.batch = a.batch_heads;
  qk.b_transposed = true;
  qk.bf16 = a.bf16;
  qk.c_fp32 = true;
  qk.a = {"q", 0, gl * a.head};
  qk.b = {"k", 0, a.keys * a.head};
  qk.c = {"workspace", 0, gl * a.keys};
  qk.workspace_offset = scores + probs;
  qk.workspace_bytes = kSplitLtWorkspace;
  // O = P . V, P written by the softmax in the problem's type after the scores.
  LtMatmul pv = qk;
  pv.m = gl;
  pv.n = a.head;
  pv.k = a.keys;
  pv.b_transposed = false;
  pv.c_fp32 = false;
  pv.a = {"workspace", scores, gl * a.keys};
  pv.b = {"v", 0, a.keys * a.head};
  pv.c = {"o", 0, gl * a.head};
  p.steps.push_back(qk);
  p.steps.push_back(LaunchStep{"attn_decode_softmax",
                               {static_cast<unsigned>(rows)},
                               {kSoftmaxThreads},
                               0,
                               {"workspace", "kv", "rows"}});
  p.steps.push_back(pv);
  p.workspace_bytes = scores + probs + kSplitLtWorkspace;
  return p;
}

Result<AttentionDecodeShape> attention_decode_shape(const Problem& p) {
  ATTUNE_ASSIGN(HalfShape h, half_shape(p, attention_decode_op()));
  AttentionDecodeShape s{h.sizes[0], h.sizes[1], h.sizes[2], h.sizes[3],
                         h.sizes[4], h.sizes[5], h.bf16};
  if (s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0 || s.q_len > s.kv)
    return Error::invalid_argument("attention_decode problem " + p.text() +
                                   ": q_heads must be a multiple of kv_heads and q_len <= kv");
  return s;
}

Result<Plan> plan_attention_decode(const Problem& problem, const Config& config) {
  ATTUNE_ASSIGN(AttentionDecodeShape s, attention_decode_shape(problem));
  const Value* kernel = config.get("kernel");
  if (!kernel)
    return Error::invalid_argument(
        fmt::format("attention_decode config '{}' has no knob 'kernel'", config.text()));
  const std::string k = kernel->as_word();
  if (k == "split")
    return Plan{split_attention_plan(
        {s.group() * s.q_len, s.kv, s.head, s.batch * s.kv_heads, s.rows(), s.q_len, s.bf16})};
  if (k == "flash") return plan_flash(s, config);
  if (k == "mma") return plan_mma(s, config);
  return Error::invalid_argument(
      fmt::format("attention_decode config '{}': unknown kernel '{}'", config.text(), k));
}

}  // namespace attune::kernels
