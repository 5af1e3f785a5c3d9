// attention_decode's signature: o = softmax(q . k^T / sqrt(head)) . v for 1-8 new tokens per
// sequence against a KV cache, layout [batch, heads, tokens, head] (PyTorch SDPA's), grouped-query
// (query head h reads KV head h / (q_heads / kv_heads)), causal among the new tokens. Its
// baseline is the split form a user without flash kernels runs: scores by a cuBLASLt batched GEMM,
// a softmax kernel, the value GEMM.
#include <fmt/format.h>

#include <algorithm>

#include "kernels/ops.h"

namespace attune::kernels {

// kernel=mma's stages per warp, rows and shared memory per block: declared in kernels/plan.h (the
// plan launches with them), defined here with the space that bounds them (core only).
unsigned attention_decode_mma_stages(std::int64_t head, std::int64_t kv_tile);
std::int64_t attention_decode_mma_block_rows(std::int64_t q_rows);
std::size_t attention_decode_mma_shared_bytes(std::int64_t head, std::int64_t kv_tile,
                                              std::int64_t warps, std::int64_t block_rows);

namespace {

// The bytes of stage buffers a warp of kernel=mma aims at (its tiles in flight: STAGES - 1 of
// them, 2 to 4 stages), about 16 KB in flight per warp so a few resident warps cover the ~30 KB
// per SM that Little's law asks of the H200's HBM (4.8 TB/s x ~700 ns over 132 SMs).
constexpr std::int64_t kMmaWarpStageBytes = 24 * 1024;

Knob knob(const char* n, std::vector<Value> o, std::size_t base = 0,
          KnobKind kind = KnobKind::kInPlace) {
  return Knob{n, std::move(o), base, kind};
}

// Lanes holding one key in the flash kernel, and the head elements each holds (its registers of
// q and of the output accumulator per query row).
std::int64_t lanes_per_key(std::int64_t head, std::int64_t vec) {
  return std::min<std::int64_t>(32, head / vec);
}
std::int64_t lane_elems(std::int64_t head, std::int64_t vec) {
  return head / lanes_per_key(head, vec);
}

// The sizes' joint rules, one line each: what the kernels are written for.
Status check_attention_decode(const Problem& p) {
  const std::int64_t head = *p.int_attr("head"), q_heads = *p.int_attr("q_heads"),
                     kv_heads = *p.int_attr("kv_heads"), q_len = *p.int_attr("q_len"),
                     kv = *p.int_attr("kv");
  if (head != 64 && head != 128 && head != 256)
    return Error::invalid_argument(
        fmt::format("attention_decode head={} is not supported (64, 128, 256)", head));
  if (q_heads % kv_heads != 0)
    return Error::invalid_argument(fmt::format(
        "attention_decode q_heads={} is not a multiple of kv_heads={} (grouped-query attention "
        "shares each KV head among q_heads / kv_heads query heads)",
        q_heads, kv_heads));
  if (q_len > 8)
    return Error::invalid_argument(fmt::format(
        "attention_decode q_len={} is more than 8 (decode steps of 1-8 tokens)", q_len));
  if (q_len > kv)
    return Error::invalid_argument(fmt::format(
        "attention_decode q_len={} is more than kv={} (the cache holds the new tokens too)", q_len,
        kv));
  return Status::success();
}

Result<Space> attention_decode_space(const Problem& p) {
  const std::int64_t kv = *p.int_attr("kv"), head = *p.int_attr("head"),
                     rows = *p.int_attr("q_heads") / *p.int_attr("kv_heads") * *p.int_attr("q_len");
  // The kernel fork first: the flash knobs are free only under it (splits, kv_tile and warps
  // under kernel=mma too), so the split baseline is one config.
  auto fixed_unless = [](const char* name, std::int64_t fixed, bool mma_too) {
    return Constraint{
        fmt::format("{} is fixed unless kernel=flash{}", name, mma_too ? " or mma" : ""),
        {"kernel", name},
        [name, fixed, mma_too](const Assignment& a) {
          const std::string k = a["kernel"].as_word();
          return k == "flash" || (mma_too && k == "mma") || a.i(name) == fixed;
        }};
  };
  auto flash = [](const Assignment& a) { return a["kernel"].as_word() == "flash"; };
  auto mma = [](const Assignment& a) { return a["kernel"].as_word() == "mma"; };
  return Space::make(
      {knob("kernel", {"split", "flash", "mma"}, 0, KnobKind::kStructural),
       knob("splits", {1, 2, 4, 8, 16, 32, 64}), knob("kv_tile", {16, 32, 64, 128}),
       knob("warps", {4, 1, 2, 8}), knob("vec", {8, 4}), knob("q_rows", {1, 2, 4, 8, 16, 32}),
       knob("combine", {"kernel", "cluster"})},
      {fixed_unless("splits", 1, true),
       fixed_unless("kv_tile", 16, true),
       fixed_unless("warps", 4, true),
       fixed_unless("vec", 8, false),
       // kernel=mma: q_rows 1 is its one m16 tile of rows per block (16, padded), 32 its two on
       // every K/V tile a warp loads: the 32 rows of a GQA group (8 query heads x 4 tokens) read
       // the cache once instead of once per 16 rows (on the H200 the q4 cell's best, two row
       // groups of 16, reached 64.9% of the read bandwidth: bench/results/attention_decode-h200-
       // 2026-12-02.md), only where the group has more than 16 rows.
       {"q_rows is fixed unless kernel=flash (kernel=mma: 1, or 32 past 16 rows a group)",
        {"kernel", "q_rows"},
        [rows](const Assignment& a) {
          const std::string k = a["kernel"].as_word();
          return k == "flash" || a.i("q_rows") == 1 ||
                 (k == "mma" && a.i("q_rows") == 32 && rows > 16);
        }},
       // The splits merged by attn_decode_combine (a second launch, through the workspace) or,
       // kernel=mma alone, inside one launch by the thread block cluster of the 2-16 splits (more
       // than 8, the portable cluster size, where the device allows it: the launch checks).
       {"combine=cluster: kernel=mma with 2-16 splits",
        {"kernel", "splits", "combine"},
        [](const Assignment& a) {
          return a["combine"].as_word() == "kernel" ||
                 (a["kernel"].as_word() == "mma" && a.i("splits") >= 2 && a.i("splits") <= 16);
        }},
       {"kernel=mma: a tile within twice the cache, every split at least one tile",
        {"kernel", "splits", "kv_tile"},
        [mma, kv](const Assignment& a) {
          return !mma(a) || ((a.i("kv_tile") == 16 || a.i("kv_tile") < 2 * kv) &&
                             (a.i("splits") == 1 || kv >= a.i("splits") * a.i("kv_tile")));
        }},
       // The fp32 output (head / 2 per lane) and scores (kv_tile / 2) of each m16 row tile in
       // registers: ptxas gave 254 registers, no spills, at the bound of one tile (head 256,
       // kv_tile 64), 128 at head 128, kv_tile 16; with two tiles 233-246 at head 128, kv_tile 16
       // and 254 at head 64, kv_tile 64, but spills at head 128, kv_tile 32 (CUDA 13.0, sm_90a).
       {"kernel=mma: registers, head / 2 + kv_tile / 2 <= 160 per lane (head + kv_tile <= 144 "
        "with two row tiles)",
        {"kernel", "kv_tile", "q_rows"},
        [mma, head](const Assignment& a) {
          if (!mma(a)) return true;
          return a.i("q_rows") == 32 ? head + a.i("kv_tile") <= 144
                                     : head / 2 + a.i("kv_tile") / 2 <= 160;
        }},
       {"kernel=mma: the warps' stage buffers fit a block's 227 KB of shared memory",
        {"kernel", "kv_tile", "warps", "q_rows"},
        [mma, head](const Assignment& a) {
          return !mma(a) ||
                 attention_decode_mma_shared_bytes(
                     head, a.i("kv_tile"), a.i("warps"),
                     attention_decode_mma_block_rows(a.i("q_rows"))) <= kMaxBlockSharedBytes;
        }},
       {"kv_tile is a multiple of the keys a block's warps load at once",
        {"kernel", "kv_tile", "warps", "vec"},
        [flash, head](const Assignment& a) {
          return !flash(a) ||
                 a.i("kv_tile") % (a.i("warps") * (32 / lanes_per_key(head, a.i("vec")))) == 0;
        }},
       {"at most 8 keys per lane per tile (the tile's loads are held in registers)",
        {"kernel", "kv_tile", "warps", "vec"},
        [flash, head](const Assignment& a) {
          return !flash(a) ||
                 a.i("kv_tile") / (a.i("warps") * (32 / lanes_per_key(head, a.i("vec")))) <= 8;
        }},
       {"a tile no longer than twice the cache",
        {"kernel", "kv_tile"},
        [flash, kv](const Assignment& a) {
          return !flash(a) || a.i("kv_tile") == 16 || a.i("kv_tile") < 2 * kv;
        }},
       {"every split at least one tile of keys: kv >= splits * kv_tile",
        {"kernel", "splits", "kv_tile"},
        [flash, kv](const Assignment& a) {
          return !flash(a) || a.i("splits") == 1 || kv >= a.i("splits") * a.i("kv_tile");
        }},
       {"no row group mostly padding: q_rows < 2 * (q_heads / kv_heads) * q_len",
        {"kernel", "q_rows"},
        [flash, rows](const Assignment& a) {
          return !flash(a) || a.i("q_rows") == 1 || a.i("q_rows") < 2 * rows;
        }},
       {"q and the accumulator fit in registers: q_rows * head elements per lane <= 64",
        {"kernel", "q_rows", "vec"},
        [flash, head](const Assignment& a) {
          return !flash(a) || a.i("q_rows") * lane_elems(head, a.i("vec")) <= 64;
        }},
       // q and the accumulator (2 q_rows x elems), the tile's loads (keys x elems, 16-bit pairs)
       // and scores (q_rows x keys): ptxas reported 165 registers for 160 so estimated (head
       // 128, q_rows 4, 8 keys) and 255 with spills for 256 (head 256, q_rows 8, 8 keys).
       {"registers: 2 * q_rows * elems + keys * elems + q_rows * keys <= 224 per lane",
        {"kernel", "q_rows", "vec", "kv_tile", "warps"},
        [flash, head](const Assignment& a) {
          if (!flash(a)) return true;
          const std::int64_t e = lane_elems(head, a.i("vec")), r = a.i("q_rows"),
                             keys = a.i("kv_tile") /
                                    (a.i("warps") * (32 / lanes_per_key(head, a.i("vec"))));
          return 2 * r * e + keys * e + r * keys <= 224;
        }}});
}

// The K and V caches, q and o once; QK^T and PV over every cached position.
OpWork attention_decode_work(const Problem& p) {
  const double batch = static_cast<double>(*p.int_attr("batch")),
               kv = static_cast<double>(*p.int_attr("kv")),
               head = static_cast<double>(*p.int_attr("head")),
               q_rows = static_cast<double>(*p.int_attr("q_heads") * *p.int_attr("q_len"));
  const double cache = 2 * batch * kv * static_cast<double>(*p.int_attr("kv_heads")) * head;
  return OpWork{2 * (cache + 2 * batch * q_rows * head), 4 * batch * q_rows * kv * head};
}

// First guesses (OpSignature::seed_configs): kernel=mma with enough KV splits that its blocks
// (splits x 16-row tiles x sequences x KV heads) fill at least half of a large GPU's ~132 SMs, and
// twice that many splits; 4 and 8 warps of 16-key tiles; the splits merged by a cluster up to the
// portable 8, past it by the second launch. A small batch at a deep cache is where a search
// learns this late: the winners of shallower cells (few splits) leave most SMs idle there, and
// configs of too few splits look slower than the split baseline (H200, head 256, kv 16384, batch
// 1: the fp16 cell's 25-candidate search stopped on the baseline's 50.3 us; at the bf16 cell 8
// splits take 41.1 us). Overrides of the baseline: vec and q_rows keep its values.
std::vector<std::string> attention_decode_seeds(const Problem& p) {
  const std::int64_t batch = *p.int_attr("batch"), kv = *p.int_attr("kv"),
                     kv_heads = *p.int_attr("kv_heads"),
                     rows = *p.int_attr("q_heads") / kv_heads * *p.int_attr("q_len");
  const std::int64_t blocks = batch * kv_heads * ((rows + 15) / 16);
  std::int64_t splits = 1;
  while (splits < 64 && blocks * splits < 64) splits *= 2;
  std::vector<std::string> out;
  for (std::int64_t s : {splits, splits * 2}) {
    if (s > 64 || kv < s * 16) continue;
    for (int warps : {4, 8})
      out.push_back(fmt::format("kernel=mma,splits={},kv_tile=16,warps={},combine={}", s, warps,
                                s >= 2 && s <= 8 ? "cluster" : "kernel"));
  }
  return out;
}

}  // namespace

unsigned attention_decode_mma_stages(std::int64_t head, std::int64_t kv_tile) {
  const std::int64_t stage = kv_tile * head * 2 * 2;  // K and V of one tile
  return static_cast<unsigned>(std::clamp<std::int64_t>(kMmaWarpStageBytes / stage, 2, 4));
}

std::int64_t attention_decode_mma_block_rows(std::int64_t q_rows) {
  return q_rows == 32 ? 32 : 16;
}

std::size_t attention_decode_mma_shared_bytes(std::int64_t head, std::int64_t kv_tile,
                                              std::int64_t warps, std::int64_t block_rows) {
  const auto stage = static_cast<std::size_t>(kv_tile * head * 2 * 2);
  return static_cast<std::size_t>(block_rows * head * 2) +
         static_cast<std::size_t>(warps) * attention_decode_mma_stages(head, kv_tile) * stage;
}

const OpSignature& attention_decode_op() {
  static const OpSignature op{
      .name = "attention_decode",
      .sizes = {"batch", "kv", "head", "q_heads", "kv_heads", "q_len"},
      .flags = {},
      .dtypes = {"bf16", "fp16"},
      .max_size = 1 << 20,
      .baseline_config = "kernel=split,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1,combine=kernel",
      .example_shape = "8x4096x128x32x8x1",
      .runtime_key = 2,
      .sweep_defaults = {{"q_heads", "32"}, {"kv_heads", "8"}, {"q_len", "1"}},
      .sweep_default_per = {"head"},
      .check = &check_attention_decode,
      .space = &attention_decode_space,
      .work = &attention_decode_work,
      .seed_configs = &attention_decode_seeds};
  return op;
}

}  // namespace attune::kernels
