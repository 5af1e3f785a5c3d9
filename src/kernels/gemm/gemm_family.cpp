#include "kernels/gemm/gemm_family.h"

#include <fmt/format.h>

#include "backends/cuda/cuda_check.h"
#include "kernels/common/gate.h"

namespace attune::kernels {

extern const char* const kGemmSkinnySource;
extern const char* const kGemmSkinnyTcSource;
extern const char* const kGemmRefSource;

namespace {

using namespace attune::cuda;

constexpr int kHeuristicAlgos = 8;
constexpr size_t kWorkspaceBytes = 64ull << 20;
// Above this many multiply-adds the float64 reference kernel is too slow to run per check; the
// reference is then cuBLASLt with float32 output (a trusted library path in higher precision).
constexpr double kNaiveRefMacs = 1.2e9;
constexpr int kSkinnyMaxM = 16;

struct Shape {
  std::int64_t m = 0, n = 0, k = 0;
  Half fmt = Half::kBf16;
  bool bias = false;
};

Result<Shape> shape_of(const Problem& p) {
  Shape s;
  ATTUNE_ASSIGN(s.m, p.int_attr("m"));
  ATTUNE_ASSIGN(s.n, p.int_attr("n"));
  ATTUNE_ASSIGN(s.k, p.int_attr("k"));
  s.fmt = *p.attr("dtype") == "fp16" ? Half::kFp16 : Half::kBf16;
  s.bias = *p.attr("bias") == "1";
  return s;
}

cudaDataType_t lt_type(Half f) { return f == Half::kBf16 ? CUDA_R_16BF : CUDA_R_16F; }

struct LtDestroy {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};

// One cuBLASLt problem: row-major C = A . B^T is column-major C^T = B . A^T, so cuBLASLt's
// "A" is our B (transposed), its "B" our A, m = N, n = M.
struct LtProblem {
  std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDestroy> desc;
  std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDestroy> a, b, c;
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics;
};

Result<LtProblem> make_lt(cublasLtHandle_t h, const Shape& s, cudaDataType_t out_type, bool bias, CUdeviceptr bias_ptr) {
  LtProblem p;
  cublasLtMatmulDesc_t d = nullptr;
  ATTUNE_CUBLASLT(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  p.desc.reset(d);
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (bias) {
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    cudaDataType_t bt = lt_type(s.fmt);
    void* bp = reinterpret_cast<void*>(bias_ptr);
    ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
    ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
  }
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&la, lt_type(s.fmt), s.k, s.n, s.k));
  p.a.reset(la);
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&lb, lt_type(s.fmt), s.k, s.m, s.k));
  p.b.reset(lb);
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&lc, out_type, s.n, s.m, s.n));
  p.c.reset(lc);
  cublasLtMatmulPreference_t pref = nullptr;
  ATTUNE_CUBLASLT(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDestroy> pref_owner(pref);
  size_t ws = kWorkspaceBytes;
  ATTUNE_CUBLASLT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  p.heuristics.resize(kHeuristicAlgos);
  int found = 0;
  ATTUNE_CUBLASLT(cublasLtMatmulAlgoGetHeuristic(h, d, la, lb, lc, lc, pref, kHeuristicAlgos, p.heuristics.data(), &found));
  p.heuristics.resize(static_cast<size_t>(found));
  return p;
}

struct Data {
  std::string key;
  DeviceBuffer a, b, bias, c, ref, ref32, workspace;
  std::optional<LtProblem> lt, lt_ref;
};

Knob knob(const char* n, std::vector<Value> o, std::size_t base = 0, KnobKind kind = KnobKind::kInPlace) {
  return Knob{n, std::move(o), base, kind};
}

class GemmFamily final : public CudaFamily {
 public:
  ~GemmFamily() override {
    if (lt_) cublasLtDestroy(lt_);
  }

  std::string op() const override { return "gemm"; }

  std::vector<ProblemInfo> examples() const override {
    std::vector<ProblemInfo> out;
    for (auto [name, m, n, k] : {std::tuple{"gemm-qwen3-8b-q-decode1", 1, 4096, 4096},
                                 std::tuple{"gemm-qwen3-8b-up-decode16", 16, 12288, 4096},
                                 std::tuple{"gemm-qwen3-8b-down-prefill2048", 2048, 4096, 12288}}) {
      Problem p("gemm", {{"m", std::to_string(m)}, {"n", std::to_string(n)}, {"k", std::to_string(k)},
                         {"dtype", "bf16"}, {"bias", "0"}}, name);
      out.push_back({p, fmt::format("bf16 {}x{}x{} (M x N x K), C = A . B^T", m, n, k)});
    }
    return out;
  }

  Result<Problem> resolve(const Problem& spec) const override {
    return resolve_half_problem(spec, "gemm", {"m", "n", "k"}, 1 << 20, {"bias"});
  }

  Result<Space> space(const Problem& problem) const override {
    ATTUNE_ASSIGN(Shape s, shape_of(problem));
    const std::int64_t m = s.m, k = s.k;
    // The kernel fork first: each kernel's knobs are free only under it, fixed elsewhere.
    auto only = [](const char* kernel_value, const char* name, std::int64_t fixed) {
      return Constraint{fmt::format("{} is fixed unless kernel={}", name, kernel_value), {"kernel", name},
                        [kernel_value, name, fixed](const Assignment& a) {
                          return a["kernel"].as_word() == kernel_value || a.i(name) == fixed;
                        }};
    };
    return Space::make(
        {knob("kernel", {"cublaslt", "skinny", "skinny_tc"}, 0, KnobKind::kStructural),
         knob("lt_algo", {0, 1, 2, 3, 4, 5, 6, 7}), knob("lt_split", {0, 2, 4, 8, 16}), knob("lt_tile", {0, 1, 2, 3, 4}),
         knob("sk_warps", {4, 1, 2, 8}), knob("sk_nb", {2, 1, 4, 8}), knob("sk_vec", {8, 4, 2, 1}), knob("sk_unroll", {1, 2, 4}),
         knob("tc_warps", {4, 1, 2, 8}), knob("tc_nt", {1, 2, 4}), knob("tc_unroll", {1, 2, 4})},
        {only("cublaslt", "lt_algo", 0), only("cublaslt", "lt_split", 0), only("cublaslt", "lt_tile", 0),
         {fmt::format("the skinny kernel is for M <= {}", kSkinnyMaxM), {"kernel"},
          [m](const Assignment& a) { return a["kernel"].as_word() != "skinny" || m <= kSkinnyMaxM; }},
         only("skinny", "sk_warps", 4), only("skinny", "sk_nb", 2), only("skinny", "sk_vec", 8), only("skinny", "sk_unroll", 1),
         {"skinny accumulators fit in registers: M * sk_nb <= 64", {"kernel", "sk_nb"},
          [m](const Assignment& a) { return a["kernel"].as_word() != "skinny" || m * a.i("sk_nb") <= 64; }},
         {"sk_vec divides K", {"kernel", "sk_vec"},
          [k](const Assignment& a) { return a["kernel"].as_word() != "skinny" || k % a.i("sk_vec") == 0; }},
         {fmt::format("the tensor-core skinny kernel is for M <= {} and K % 8 == 0", kSkinnyMaxM), {"kernel"},
          [m, k](const Assignment& a) { return a["kernel"].as_word() != "skinny_tc" || (m <= kSkinnyMaxM && k % 8 == 0); }},
         only("skinny_tc", "tc_warps", 4), only("skinny_tc", "tc_nt", 1), only("skinny_tc", "tc_unroll", 1)});
  }

  std::optional<BuildRequest> build_request(const Problem& problem, const Config& c) const override {
    const std::string kernel = c.get("kernel")->as_word();
    auto s = shape_of(problem);
    if (kernel == "cublaslt" || !s) return std::nullopt;
    BuildRequest r;
    if (kernel == "skinny_tc") {
      const bool bf16 = s->fmt == Half::kBf16;
      r.source = kGemmSkinnyTcSource;
      r.source_name = "gemm_skinny_tc.cu";
      r.options = {fmt::format("-DT={}", bf16 ? "__nv_bfloat16" : "__half"), fmt::format("-DTNAME=\"{}\"", bf16 ? "bf16" : "f16"),
                   fmt::format("-DM={}", s->m), fmt::format("-DN={}", s->n), fmt::format("-DK={}", s->k),
                   fmt::format("-DWARPS={}", c.get("tc_warps")->as_int()), fmt::format("-DNT={}", c.get("tc_nt")->as_int()),
                   fmt::format("-DUNROLL={}", c.get("tc_unroll")->as_int()), fmt::format("-DBIAS={}", s->bias ? 1 : 0)};
      r.name_expressions = {"gemm_skinny_tc"};
      return r;
    }
    r.source = kGemmSkinnySource;
    r.source_name = "gemm_skinny.cu";
    r.options = {fmt::format("-DT={}", s->fmt == Half::kBf16 ? "__nv_bfloat16" : "__half"),
                 fmt::format("-DM={}", s->m), fmt::format("-DN={}", s->n), fmt::format("-DK={}", s->k),
                 fmt::format("-DWARPS={}", c.get("sk_warps")->as_int()), fmt::format("-DNB={}", c.get("sk_nb")->as_int()),
                 fmt::format("-DVEC={}", c.get("sk_vec")->as_int()), fmt::format("-DUNROLL={}", c.get("sk_unroll")->as_int()),
                 fmt::format("-DBIAS={}", s->bias ? 1 : 0)};
    r.name_expressions = {"gemm_skinny"};
    return r;
  }

 private:
  Status prepare_data(CudaEnv& env, const Problem& problem, const Shape& s) {
    if (data_.key == problem.structural_key()) return Status::success();
    data_ = Data{};
    if (!lt_) ATTUNE_CUBLASLT(cublasLtCreate(&lt_));
    const size_t mk = static_cast<size_t>(s.m * s.k), nk = static_cast<size_t>(s.n * s.k), mn = static_cast<size_t>(s.m * s.n);
    ATTUNE_ASSIGN(data_.a, DeviceBuffer::alloc(mk * 2));
    ATTUNE_ASSIGN(data_.b, DeviceBuffer::alloc(nk * 2));
    ATTUNE_ASSIGN(data_.bias, DeviceBuffer::alloc(static_cast<size_t>(s.n) * 2));
    ATTUNE_ASSIGN(data_.c, DeviceBuffer::alloc((mn + kGuardElements) * 2));
    ATTUNE_ASSIGN(data_.ref, DeviceBuffer::alloc(mn * 8));
    ATTUNE_ASSIGN(data_.workspace, DeviceBuffer::alloc(kWorkspaceBytes));
    ATTUNE_ASSIGN(LtProblem lt, make_lt(lt_, s, lt_type(s.fmt), s.bias, data_.bias.ptr()));
    data_.lt = std::move(lt);
    if (static_cast<double>(s.m) * s.n * s.k > kNaiveRefMacs) {
      ATTUNE_ASSIGN(data_.ref32, DeviceBuffer::alloc(mn * 4));
      ATTUNE_ASSIGN(LtProblem ref, make_lt(lt_, s, CUDA_R_32F, false, 0));
      if (ref.heuristics.empty()) return Error::internal("cuBLASLt offers no fp32-output algorithm for the reference");
      data_.lt_ref = std::move(ref);
    }
    (void)env;
    data_.key = problem.structural_key();
    return Status::success();
  }

  Status reference(CudaEnv& env, const Shape& s) {
    BuildRequest req;
    req.source = kGemmRefSource;
    req.source_name = "gemm_ref.cu";
    int fmt_id = s.fmt == Half::kBf16 ? 0 : 1, has_bias = s.bias ? 1 : 0;
    CUdeviceptr ref = data_.ref.ptr(), a = data_.a.ptr(), b = data_.b.ptr(), bias = data_.bias.ptr();
    if (!data_.lt_ref) {
      ATTUNE_ASSIGN(Built k, env.function(req, "gemm_ref"));
      if (k.verdict != Verdict::kOk) return Error::internal("the gemm reference does not compile: " + k.log);
      int m = static_cast<int>(s.m), n = static_cast<int>(s.n), kk = static_cast<int>(s.k);
      void* args[] = {&ref, &a, &b, &bias, &m, &n, &kk, &fmt_id, &has_bias};
      const unsigned grid = static_cast<unsigned>((s.m * s.n + 255) / 256);
      ATTUNE_CU(cuLaunchKernel(k.fn, grid, 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
      return Status::success();
    }
    const float one = 1.f, zero = 0.f;
    const auto& lt = *data_.lt_ref;
    ATTUNE_CUBLASLT(cublasLtMatmul(lt_, lt.desc.get(), &one, reinterpret_cast<void*>(b), lt.a.get(),
                                   reinterpret_cast<void*>(a), lt.b.get(), &zero, reinterpret_cast<void*>(data_.ref32.ptr()),
                                   lt.c.get(), reinterpret_cast<void*>(data_.ref32.ptr()), lt.c.get(), &lt.heuristics[0].algo,
                                   reinterpret_cast<void*>(data_.workspace.ptr()), kWorkspaceBytes, env.stream()));
    ATTUNE_ASSIGN(Built w, env.function(req, "widen_add_bias"));
    CUdeviceptr in = data_.ref32.ptr();
    int n = static_cast<int>(s.n);
    unsigned long long count = static_cast<unsigned long long>(s.m * s.n);
    void* args[] = {&ref, &in, &bias, &n, &count, &fmt_id, &has_bias};
    ATTUNE_CU(cuLaunchKernel(w.fn, grid_for(count), 1, 1, 256, 1, 1, 0, env.stream(), args, nullptr));
    return Status::success();
  }

  // The cuBLASLt algorithm for a config, or why there is none.
  Result<std::pair<std::optional<cublasLtMatmulAlgo_t>, std::string>> lt_algo(const Config& c) {
    using R = std::pair<std::optional<cublasLtMatmulAlgo_t>, std::string>;
    const auto& lt = *data_.lt;
    const auto rank = static_cast<size_t>(c.get("lt_algo")->as_int());
    if (rank >= lt.heuristics.size())
      return R{std::nullopt, fmt::format("cuBLASLt's heuristic returned {} algorithms, not {}", lt.heuristics.size(), rank + 1)};
    cublasLtMatmulAlgo_t algo = lt.heuristics[rank].algo;
    if (auto split = static_cast<std::uint32_t>(c.get("lt_split")->as_int())) {
      if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split) != CUBLAS_STATUS_SUCCESS)
        return R{std::nullopt, "this algorithm takes no split-K setting"};
    }
    if (auto tile = c.get("lt_tile")->as_int()) {
      size_t bytes = 0;
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, nullptr, 0, &bytes);
      std::vector<std::uint32_t> tiles(bytes / sizeof(std::uint32_t));
      if (!tiles.empty())
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles.data(), bytes, &bytes);
      if (static_cast<size_t>(tile) > tiles.size())
        return R{std::nullopt, fmt::format("this algorithm offers {} tile shapes, not {}", tiles.size(), tile)};
      std::uint32_t id = tiles[static_cast<size_t>(tile) - 1];
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &id, sizeof id);
      // A tile is valid only with a pipeline depth it supports: the heuristic's stages rarely
      // fit another tile (every tile override was refused on the H200 with them), so take the
      // first stages setting the algorithm lists that cuBLASLt accepts with this tile.
      size_t sbytes = 0;
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, nullptr, 0, &sbytes);
      std::vector<std::uint32_t> stages(sbytes / sizeof(std::uint32_t));
      if (!stages.empty())
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, stages.data(), sbytes, &sbytes);
      for (std::uint32_t st : stages) {
        cublasLtMatmulAlgo_t trial = algo;
        cublasLtMatmulAlgoConfigSetAttribute(&trial, CUBLASLT_ALGO_CONFIG_STAGES_ID, &st, sizeof st);
        cublasLtMatmulHeuristicResult_t probe{};
        if (cublasLtMatmulAlgoCheck(lt_, lt.desc.get(), lt.a.get(), lt.b.get(), lt.c.get(), lt.c.get(), &trial, &probe) ==
            CUBLAS_STATUS_SUCCESS) {
          algo = trial;
          break;
        }
      }
    }
    cublasLtMatmulHeuristicResult_t check{};
    cublasStatus_t st = cublasLtMatmulAlgoCheck(lt_, lt.desc.get(), lt.a.get(), lt.b.get(), lt.c.get(), lt.c.get(), &algo, &check);
    if (st != CUBLAS_STATUS_SUCCESS) return R{std::nullopt, fmt::format("cuBLASLt refuses this variant (status {})", static_cast<int>(st))};
    if (check.workspaceSize > kWorkspaceBytes) return R{std::nullopt, "needs more workspace than attune gives cuBLASLt"};
    return R{algo, ""};
  }

  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config, Regime regime) override {
    ATTUNE_ASSIGN(Shape s, shape_of(problem));
    ATTUNE_TRY(prepare_data(env, problem, s));
    Outcome o;
    const std::string kernel = config.get("kernel")->as_word();
    const bool skinny = kernel != "cublaslt";
    std::function<CUresult(CUstream)> launch;
    CUdeviceptr a = data_.a.ptr(), b = data_.b.ptr(), c = data_.c.ptr(), bias = data_.bias.ptr();
    void* args[] = {&c, &a, &b, &bias};
    cublasLtMatmulAlgo_t algo{};
    if (skinny) {
      const bool tc = kernel == "skinny_tc";
      ATTUNE_ASSIGN(Built k, env.function(*build_request(problem, config), tc ? "gemm_skinny_tc" : "gemm_skinny"));
      if (k.verdict != Verdict::kOk) {
        o.verdict = k.verdict;
        o.message = k.log;
        return o;
      }
      const unsigned threads = static_cast<unsigned>(config.get(tc ? "tc_warps" : "sk_warps")->as_int() * 32);
      ATTUNE_ASSIGN(std::string why, check_launch(k.fn, threads, 0, env.limits().max_shared_per_block_optin));
      if (!why.empty()) {
        o.verdict = Verdict::kLaunchFailed;
        o.message = why;
        return o;
      }
      const auto nb = tc ? 16 * config.get("tc_nt")->as_int() : config.get("sk_nb")->as_int();
      const unsigned grid = static_cast<unsigned>((s.n + nb - 1) / nb);
      CUfunction fn = k.fn;
      launch = [fn, grid, threads, &args](CUstream st) { return cuLaunchKernel(fn, grid, 1, 1, threads, 1, 1, 0, st, args, nullptr); };
    } else {
      ATTUNE_ASSIGN(auto found, lt_algo(config));
      if (!found.first) {
        o.verdict = Verdict::kUnsupported;
        o.message = found.second;
        return o;
      }
      algo = *found.first;
      const auto& lt = *data_.lt;
      void* ws = reinterpret_cast<void*>(data_.workspace.ptr());
      cublasLtHandle_t h = lt_;
      launch = [&lt, h, a, b, c, ws, &algo](CUstream st) -> CUresult {
        static const float one = 1.f, zero = 0.f;
        cublasStatus_t rc = cublasLtMatmul(h, lt.desc.get(), &one, reinterpret_cast<void*>(b), lt.a.get(), reinterpret_cast<void*>(a),
                                           lt.b.get(), &zero, reinterpret_cast<void*>(c), lt.c.get(), reinterpret_cast<void*>(c),
                                           lt.c.get(), &algo, ws, kWorkspaceBytes, st);
        return rc == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
      };
    }

    // Fresh random inputs, poisoned output and guard, the reference on the same inputs.
    const size_t mn = static_cast<size_t>(s.m * s.n);
    ATTUNE_TRY(gate_.fill_random(env, a, static_cast<size_t>(s.m * s.k), s.fmt));
    ATTUNE_TRY(gate_.fill_random(env, b, static_cast<size_t>(s.n * s.k), s.fmt));
    ATTUNE_TRY(gate_.fill_random(env, bias, static_cast<size_t>(s.n), s.fmt));
    ATTUNE_TRY(data_.c.fill16(kPoison16, env.stream()));
    ATTUNE_TRY(reference(env, s));
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, skinny ? "gemm kernel" : "cublasLtMatmul"));
    if (refused) return *refused;
    ATTUNE_ASSIGN(Comparison cmp, gate_.check_output(env, c, data_.ref.ptr(), mn, s.fmt,
                                                     tolerance_for(s.fmt == Half::kBf16 ? "bf16" : "fp16", s.k)));
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

std::unique_ptr<CudaFamily> make_gemm_family() { return std::make_unique<GemmFamily>(); }

}  // namespace attune::kernels
