#include "kernels/attention_decode/attention_decode_family.h"

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "kernels/common/gate.h"
#include "kernels/common/plan_run.h"
#include "kernels/ops.h"

namespace attune::kernels {

extern const char* const kAttentionDecodeRefSource;
// The kernel=mma form's dynamic shared memory per block (attention_decode_plan.cpp), so the space
// rejects configs over a block's limit before any compile.
std::size_t attention_decode_mma_shared_bytes(std::int64_t head, std::int64_t kv_tile,
                                              std::int64_t warps);

namespace {

using namespace attune::cuda;

// Queries are drawn from [-kQueryRange, kQueryRange), keys and values from [-1, 1): scores then
// spread (std ~1.3 before the softmax) so the weights are far from uniform and a key dropped,
// masked wrongly or counted twice moves small-cache outputs well past the tolerance.
constexpr float kQueryRange = 3.f;

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

struct Data {
  std::string key;
  DeviceBuffer q, k, v, o, ref, scores, workspace;
};

class AttentionDecodeFamily final : public CudaFamily {
 public:
  ~AttentionDecodeFamily() override {
    if (lt_) cublasLtDestroy(lt_);
  }

  std::string op() const override { return attention_decode_op().name; }

  std::vector<ProblemInfo> examples() const override {
    std::vector<ProblemInfo> out;
    for (auto [name, batch, kv] : {std::tuple{"attention-decode-qwen3-8b-b1-kv4096", 1, 4096},
                                   std::tuple{"attention-decode-qwen3-8b-b8-kv16384", 8, 16384},
                                   std::tuple{"attention-decode-qwen3-8b-b32-kv4096", 32, 4096}}) {
      Problem p("attention_decode",
                {{"batch", std::to_string(batch)},
                 {"kv", std::to_string(kv)},
                 {"head", "128"},
                 {"q_heads", "32"},
                 {"kv_heads", "8"},
                 {"q_len", "1"},
                 {"dtype", "bf16"}},
                name);
      out.push_back({p, fmt::format("bf16 decode attention of Qwen3-8B (32 query heads, 8 KV "
                                    "heads, head 128), batch {}, KV depth {}",
                                    batch, kv)});
    }
    return out;
  }

  Result<Problem> resolve(const Problem& spec) const override {
    return attention_decode_op().resolve(spec);
  }

  Result<Space> space(const Problem& problem) const override {
    ATTUNE_ASSIGN(AttentionDecodeShape s, attention_decode_shape(problem));
    const std::int64_t kv = s.kv, head = s.head, rows = s.group() * s.q_len;
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
         knob("warps", {4, 1, 2, 8}), knob("vec", {8, 4}), knob("q_rows", {1, 2, 4, 8, 16})},
        {fixed_unless("splits", 1, true),
         fixed_unless("kv_tile", 16, true),
         fixed_unless("warps", 4, true),
         fixed_unless("vec", 8, false),
         fixed_unless("q_rows", 1, false),
         {"kernel=mma: a tile within twice the cache, every split at least one tile",
          {"kernel", "splits", "kv_tile"},
          [mma, kv](const Assignment& a) {
            return !mma(a) || ((a.i("kv_tile") == 16 || a.i("kv_tile") < 2 * kv) &&
                               (a.i("splits") == 1 || kv >= a.i("splits") * a.i("kv_tile")));
          }},
         // The fp32 output (head / 2 per lane) and scores (kv_tile / 2) in registers: ptxas gave
         // 254 registers, no spills, at the bound (head 256, kv_tile 64), 128 at head 128,
         // kv_tile 16 (CUDA 13.0, sm_90).
         {"kernel=mma: registers, head / 2 + kv_tile / 2 <= 160 per lane",
          {"kernel", "kv_tile"},
          [mma, head](const Assignment& a) {
            return !mma(a) || head / 2 + a.i("kv_tile") / 2 <= 160;
          }},
         {"kernel=mma: the warps' stage buffers fit a block's 227 KB of shared memory",
          {"kernel", "kv_tile", "warps"},
          [mma, head](const Assignment& a) {
            return !mma(a) || attention_decode_mma_shared_bytes(head, a.i("kv_tile"),
                                                                a.i("warps")) <= 227 * 1024;
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

  std::optional<BuildRequest> build_request(const Problem& problem,
                                            const Config& c) const override {
    auto plan = plan_attention_decode(problem, c);
    if (!plan) return std::nullopt;
    if (const auto* kp = std::get_if<KernelPlan>(&*plan)) return kp->build;
    if (const auto* cp = std::get_if<ChainPlan>(&*plan)) return cp->build;
    return std::nullopt;
  }

 private:
  Status prepare_data(const Problem& problem, const AttentionDecodeShape& s) {
    if (data_.key == problem.structural_key()) return Status::success();
    data_ = Data{};
    if (!lt_) ATTUNE_CUBLASLT(cublasLtCreate(&lt_));
    const auto q = static_cast<std::size_t>(s.rows() * s.head);
    const auto kv = static_cast<std::size_t>(s.batch * s.kv_heads * s.kv * s.head);
    ATTUNE_ASSIGN(data_.q, DeviceBuffer::alloc(q * 2));
    ATTUNE_ASSIGN(data_.k, DeviceBuffer::alloc(kv * 2));
    ATTUNE_ASSIGN(data_.v, DeviceBuffer::alloc(kv * 2));
    ATTUNE_ASSIGN(data_.o, DeviceBuffer::alloc((q + kGuardElements) * 2));
    ATTUNE_ASSIGN(data_.ref, DeviceBuffer::alloc(q * 8));
    ATTUNE_ASSIGN(data_.scores, DeviceBuffer::alloc(static_cast<std::size_t>(s.rows() * s.kv) * 8));
    data_.key = problem.structural_key();
    return Status::success();
  }

  // A plan's workspace (split partials, the baseline's scores and probabilities), grown as
  // candidates need it.
  Status ensure_workspace(std::size_t bytes) {
    if (data_.workspace.bytes() >= bytes && data_.workspace.ptr()) return Status::success();
    data_.workspace = DeviceBuffer{};
    ATTUNE_ASSIGN(data_.workspace, DeviceBuffer::alloc(std::max<std::size_t>(bytes, 256)));
    return Status::success();
  }

  Status reference(CudaEnv& env, const AttentionDecodeShape& s) {
    BuildRequest req;
    req.source = kAttentionDecodeRefSource;
    req.source_name = "attention_decode_ref.cu";
    ATTUNE_ASSIGN(Built ref, env.function(req, "attention_decode_ref"));
    if (ref.verdict != Verdict::kOk)
      return Error::internal("the attention_decode reference does not compile: " + ref.log);
    CUdeviceptr out = data_.ref.ptr(), scores = data_.scores.ptr(), q = data_.q.ptr(),
                k = data_.k.ptr(), v = data_.v.ptr();
    int kv = static_cast<int>(s.kv), head = static_cast<int>(s.head),
        q_heads = static_cast<int>(s.q_heads), kv_heads = static_cast<int>(s.kv_heads),
        q_len = static_cast<int>(s.q_len), f = s.bf16 ? 0 : 1;
    void* args[] = {&out, &scores, &q, &k, &v, &kv, &head, &q_heads, &kv_heads, &q_len, &f};
    ATTUNE_CU(cuLaunchKernel(ref.fn, static_cast<unsigned>(s.rows()), 1, 1, 256, 1, 1, 0,
                             env.stream(), args, nullptr));
    return Status::success();
  }

  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config,
                      Regime regime) override {
    ATTUNE_ASSIGN(AttentionDecodeShape s, attention_decode_shape(problem));
    ATTUNE_ASSIGN(Plan plan, plan_attention_decode(problem, config));
    ATTUNE_TRY(prepare_data(problem, s));
    PlanArgs args;
    args.q = data_.q.ptr();
    args.k = data_.k.ptr();
    args.v = data_.v.ptr();
    args.o = data_.o.ptr();
    args.kv = static_cast<int>(s.kv);
    args.rows = static_cast<int>(s.rows());
    PreparedPlan prepared;
    ATTUNE_ASSIGN(auto unready, prepare_plan(env, lt_, plan, &prepared));
    if (unready) return *unready;
    ATTUNE_TRY(ensure_workspace(prepared.workspace_bytes));
    args.workspace = data_.workspace.ptr();
    const auto launch = plan_launcher(lt_, plan, prepared, args);

    // Fresh random inputs, poisoned output and guard, the reference on the same inputs.
    const Half fmt = s.bf16 ? Half::kBf16 : Half::kFp16;
    const auto nq = static_cast<std::size_t>(s.rows() * s.head);
    const auto nkv = static_cast<std::size_t>(s.batch * s.kv_heads * s.kv * s.head);
    ATTUNE_TRY(gate_.fill_random(env, args.q, nq, fmt, -kQueryRange, kQueryRange));
    ATTUNE_TRY(gate_.fill_random(env, args.k, nkv, fmt));
    ATTUNE_TRY(gate_.fill_random(env, args.v, nkv, fmt));
    ATTUNE_TRY(data_.o.fill16(kPoison16, env.stream()));
    ATTUNE_TRY(reference(env, s));
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "attention_decode"));
    if (refused) return *refused;
    // Each output is a convex combination of value rows in fp32 (softmax weights summing to 1),
    // so its error is the 16-bit rounding of the output itself, plus, in the split baseline, of
    // P (one rounding of each weight, averaged over the keys), far under 5 ulps; the fp32
    // accumulation over kv keys grows like sqrt(kv), as tolerance_for's reduction length says.
    const Tolerance tol = tolerance_for(s.bf16 ? "bf16" : "fp16", s.kv);
    ATTUNE_ASSIGN(Comparison cmp, gate_.check_output(env, args.o, data_.ref.ptr(), nq, fmt, tol));
    Outcome o;
    o.verdict = cmp.verdict;
    o.check = cmp.check;
    o.message = cmp.message;
    if (o.verdict != Verdict::kOk) return o;
    ATTUNE_ASSIGN(Measurement m, env.time(launch, regime));
    o.measurement = m;
    return o;
  }

  cublasLtHandle_t lt_ = nullptr;
  DeviceGate gate_;
  Data data_;
};

}  // namespace

std::unique_ptr<CudaFamily> make_attention_decode_family() {
  return std::make_unique<AttentionDecodeFamily>();
}

}  // namespace attune::kernels
