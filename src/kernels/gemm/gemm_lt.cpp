#include "kernels/gemm/gemm_lt.h"

#include <fmt/format.h>

#include "cuda/cuda_check.h"

namespace attune::kernels {

std::string lt_description(const cublasLtMatmulAlgo_t& algo) {
  // Each attribute read with its own size (cuBLASLt refuses another): 32 bits, the inner and
  // cluster shapes 16; a refused read leaves 0.
  auto get = [&algo]<typename V>(cublasLtMatmulAlgoConfigAttributes_t attr, V v) {
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &written);
    return v;
  };
  return fmt::format(
      "cublasLtMatmul algo={} tile={} stages={} split_k={} reduction={} swizzle={} custom={} "
      "inner={} cluster={}",
      get(CUBLASLT_ALGO_CONFIG_ID, std::int32_t{}),
      get(CUBLASLT_ALGO_CONFIG_TILE_ID, std::uint32_t{}),
      get(CUBLASLT_ALGO_CONFIG_STAGES_ID, std::uint32_t{}),
      get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, std::int32_t{}),
      get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, std::uint32_t{}),
      get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, std::uint32_t{}),
      get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, std::uint32_t{}),
      get(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, std::uint16_t{}),
      get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, std::uint16_t{}));
}

cudaDataType_t lt_type(bool bf16) {
  return bf16 ? CUDA_R_16BF : CUDA_R_16F;
}

Result<LtProblem> make_lt(cublasLtHandle_t h, const GemmShape& s, cudaDataType_t out_type,
                          bool bias, void* bias_ptr) {
  LtProblem p;
  cublasLtMatmulDesc_t d = nullptr;
  ATTUNE_CUBLASLT(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  p.desc.reset(d);
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (bias) {
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    cudaDataType_t bt = lt_type(s.bf16);
    ATTUNE_CUBLASLT(
        cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                                   sizeof bias_ptr));
    ATTUNE_CUBLASLT(
        cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
  }
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&la, lt_type(s.bf16), s.k, s.n, s.k));
  p.a.reset(la);
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&lb, lt_type(s.bf16), s.k, s.m, s.k));
  p.b.reset(lb);
  ATTUNE_CUBLASLT(cublasLtMatrixLayoutCreate(&lc, out_type, s.n, s.m, s.n));
  p.c.reset(lc);
  cublasLtMatmulPreference_t pref = nullptr;
  ATTUNE_CUBLASLT(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDestroy> pref_owner(pref);
  size_t ws = kLtWorkspaceBytes;
  ATTUNE_CUBLASLT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  p.heuristics.resize(kLtHeuristicAlgos);
  int found = 0;
  ATTUNE_CUBLASLT(cublasLtMatmulAlgoGetHeuristic(h, d, la, lb, lc, lc, pref, kLtHeuristicAlgos,
                                                 p.heuristics.data(), &found));
  p.heuristics.resize(static_cast<size_t>(found));
  return p;
}

LtChoice choose_lt_algo(cublasLtHandle_t h, const LtProblem& lt, const LtPlan& plan) {
  const auto rank = static_cast<size_t>(plan.algo_rank);
  if (rank >= lt.heuristics.size())
    return {std::nullopt, fmt::format("cuBLASLt's heuristic returned {} algorithms, not {}",
                                      lt.heuristics.size(), rank + 1)};
  cublasLtMatmulAlgo_t algo = lt.heuristics[rank].algo;
  if (auto split = static_cast<std::uint32_t>(plan.split_k)) {
    if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                             sizeof split) != CUBLAS_STATUS_SUCCESS)
      return {std::nullopt, "this algorithm takes no split-K setting"};
  }
  if (auto tile = plan.tile) {
    size_t bytes = 0;
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, nullptr, 0, &bytes);
    std::vector<std::uint32_t> tiles(bytes / sizeof(std::uint32_t));
    if (!tiles.empty())
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles.data(), bytes,
                                        &bytes);
    if (static_cast<size_t>(tile) > tiles.size())
      return {std::nullopt,
              fmt::format("this algorithm offers {} tile shapes, not {}", tiles.size(), tile)};
    std::uint32_t id = tiles[static_cast<size_t>(tile) - 1];
    cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &id, sizeof id);
    // A tile is valid only with a pipeline depth it supports, and on Hopper with a cluster shape
    // that fits it: the heuristic's stages and cluster rarely fit another tile (every tile
    // override was refused on the H200 with them). Take the first stages setting the algorithm
    // lists that cuBLASLt accepts with this tile, with the algorithm's own cluster shape or else
    // with cuBLASLt choosing one.
    size_t sbytes = 0;
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, nullptr, 0, &sbytes);
    std::vector<std::uint32_t> stages(sbytes / sizeof(std::uint32_t));
    if (!stages.empty())
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, stages.data(), sbytes,
                                        &sbytes);
    auto accepted = [&](cublasLtMatmulAlgo_t& trial) {
      cublasLtMatmulHeuristicResult_t probe{};
      return cublasLtMatmulAlgoCheck(h, lt.desc.get(), lt.a.get(), lt.b.get(), lt.c.get(),
                                     lt.c.get(), &trial, &probe) == CUBLAS_STATUS_SUCCESS;
    };
    bool found = false;
    for (std::uint32_t cluster_auto = 0; cluster_auto < 2 && !found; ++cluster_auto) {
      for (std::uint32_t st : stages) {
        cublasLtMatmulAlgo_t trial = algo;
        cublasLtMatmulAlgoConfigSetAttribute(&trial, CUBLASLT_ALGO_CONFIG_STAGES_ID, &st,
                                             sizeof st);
        if (cluster_auto) {
          const std::uint32_t any = CUBLASLT_CLUSTER_SHAPE_AUTO;
          cublasLtMatmulAlgoConfigSetAttribute(&trial, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &any,
                                               sizeof any);
        }
        if (accepted(trial)) {
          algo = trial;
          found = true;
          break;
        }
      }
    }
  }
  cublasLtMatmulHeuristicResult_t check{};
  cublasStatus_t st = cublasLtMatmulAlgoCheck(h, lt.desc.get(), lt.a.get(), lt.b.get(), lt.c.get(),
                                              lt.c.get(), &algo, &check);
  if (st != CUBLAS_STATUS_SUCCESS)
    return {std::nullopt,
            fmt::format("cuBLASLt refuses this variant (status {})", static_cast<int>(st))};
  if (check.workspaceSize > kLtWorkspaceBytes)
    return {std::nullopt, "needs more workspace than attune gives cuBLASLt"};
  return {algo, ""};
}

cublasStatus_t lt_matmul(cublasLtHandle_t h, const LtProblem& lt, const cublasLtMatmulAlgo_t& algo,
                         const void* a, const void* b, void* c, void* workspace,
                         cudaStream_t stream, const void* residual) {
  static const float one = 1.f, zero = 0.f;
  return cublasLtMatmul(h, lt.desc.get(), &one, b, lt.a.get(), a, lt.b.get(),
                        residual ? &one : &zero, residual ? residual : c, lt.c.get(), c, lt.c.get(),
                        &algo, workspace, kLtWorkspaceBytes, stream);
}

}  // namespace attune::kernels
