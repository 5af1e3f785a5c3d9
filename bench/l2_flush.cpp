// bench/l2_flush: what the deploy regime's L2 flush does to GEMM times. Per shape, every cuBLASLt
// heuristic algorithm (and, given gemm_llm.csv, attune's winning config) is timed three ways in one
// process: warm (the rank regime: back-to-back replays, L2 holding the weights), cold after a
// memset flush (L2 full of dirty lines, as nvbench and Triton leave it) and cold after a flush by
// reads (L2 full of clean lines, as a decode loop's previous layer leaves it). Usage: l2_flush
// [--winners gemm_llm.csv] SPEC...   (SPEC: gemm:m=1,n=1024,k=1024,dtype=bf16) Prints a Markdown
// table and its summary.
#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cuda/cuda_device.h"
#include "cuda/cuda_run.h"
#include "cuda/nvrtc_build.h"
#include "kernels/gemm/gemm_lt.h"
#include "kernels/plan_launch.h"

namespace {

using namespace attune;
using namespace attune::cuda;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "l2_flush: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T must(Result<T> r, const char* what) {
  if (!r) die(fmt::format("{}: {}", what, r.error().message()));
  return std::move(*r);
}

// One CSV record; fields may be quoted (a config holds commas).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

// gemm_llm.csv: "MxNxK" -> attune's winning config.
std::map<std::string, std::string> read_winners(const std::string& path) {
  std::ifstream in(path);
  if (!in) die("cannot read " + path);
  std::map<std::string, std::string> out;
  std::string line;
  std::getline(in, line);
  const auto header = csv_fields(line);
  auto col = [&](const char* name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    die(fmt::format("{} has no column {}", path, name));
  };
  const std::size_t m = col("m"), n = col("n"), k = col("k"), config = col("config");
  while (std::getline(in, line)) {
    auto f = csv_fields(line);
    if (f.size() > config) out[f[m] + "x" + f[n] + "x" + f[k]] = f[config];
  }
  return out;
}

struct Times {
  double warm = 0, write = 0, read = 0;
};

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> winners;
  std::vector<std::string> specs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--winners" && i + 1 < argc) {
      winners = read_winners(argv[++i]);
    } else {
      specs.push_back(a);
    }
  }
  if (specs.empty()) die("usage: l2_flush [--winners gemm_llm.csv] SPEC...");

  auto dev = must(CudaDevice::open(0), "opening device 0");
  const DeviceLimits& lim = dev->limits();
  CUstream stream = dev->stream();
  Compiler compiler(nvrtc_arch(lim.major, lim.minor), default_cache_dir());
  L2Flush by_write =
      must(L2Flush::create(compiler, lim.l2_bytes, lim.sm_count, FlushKind::kWrite), "write flush");
  L2Flush by_read =
      must(L2Flush::create(compiler, lim.l2_bytes, lim.sm_count, FlushKind::kRead), "read flush");
  cublasLtHandle_t lt = nullptr;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) die("cublasLtCreate failed");
  DeviceBuffer lt_ws = must(DeviceBuffer::alloc(kernels::kLtWorkspaceBytes), "workspace");

  const TimingOptions warm_opts = timing_options(Regime::kRank),
                      cold_opts = timing_options(Regime::kDeploy);
  auto time3 = [&](const std::function<CUresult(CUstream)>& launch) {
    Times t;
    t.warm =
        must(time_kernel(launch, stream, Regime::kRank, by_read, warm_opts, lim.pci_bus_id), "warm")
            .median_us;
    t.write =
        must(time_kernel(launch, stream, Regime::kDeploy, by_write, cold_opts, lim.pci_bus_id),
             "write")
            .median_us;
    t.read = must(time_kernel(launch, stream, Regime::kDeploy, by_read, cold_opts, lim.pci_bus_id),
                  "read")
                 .median_us;
    return t;
  };

  std::printf(
      "| M | N | K | algos | default warm us | default write us | default read us | write/read | "
      "best algo warm/write/read | warm cost of cold best (write, read) | attune write us | attune "
      "read us | "
      "default/attune write | default/attune read |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<double> write_over_read, ratio_write, ratio_read, cost_write, cost_read;
  for (const std::string& spec : specs) {
    Problem problem = must(Problem::parse(spec), "problem");
    kernels::GemmShape s = must(kernels::gemm_shape(problem), "gemm shape");
    auto a = must(DeviceBuffer::alloc(static_cast<size_t>(s.m * s.k) * 2), "A");
    auto b = must(DeviceBuffer::alloc(static_cast<size_t>(s.n * s.k) * 2), "B");
    auto c = must(DeviceBuffer::alloc(static_cast<size_t>(s.m * s.n) * 2), "C");
    // Small finite values (bf16 0.0078125, fp16 0.00048828125): times do not depend on them.
    if (!a.fill16(s.bf16 ? 0x3c00 : 0x1000, stream) || !b.fill16(s.bf16 ? 0x3c00 : 0x1000, stream))
      die("filling inputs");
    auto prob =
        must(kernels::make_lt(lt, s, kernels::lt_type(s.bf16), false, nullptr), "cuBLASLt problem");

    auto lt_launch = [&](cublasLtMatmulAlgo_t algo) {
      return [&, algo](CUstream st) {
        return kernels::lt_matmul(lt, prob, algo, reinterpret_cast<void*>(a.ptr()),
                                  reinterpret_cast<void*>(b.ptr()),
                                  reinterpret_cast<void*>(c.ptr()),
                                  reinterpret_cast<void*>(lt_ws.ptr()), st) == CUBLAS_STATUS_SUCCESS
                   ? CUDA_SUCCESS
                   : CUDA_ERROR_LAUNCH_FAILED;
      };
    };
    std::vector<Times> algos;
    for (const auto& h : prob.heuristics) algos.push_back(time3(lt_launch(h.algo)));
    if (algos.empty()) die(spec + ": cuBLASLt returned no algorithm");
    auto best = [&](double Times::*f) {
      std::size_t i = 0;
      for (std::size_t j = 1; j < algos.size(); ++j)
        if (algos[j].*f < algos[i].*f) i = j;
      return i;
    };
    const std::size_t bw = best(&Times::warm), bwr = best(&Times::write), brd = best(&Times::read);
    const double cw = algos[bwr].warm / algos[bw].warm - 1,
                 cr = algos[brd].warm / algos[bw].warm - 1;
    cost_write.push_back(cw);
    cost_read.push_back(cr);
    const Times& d = algos[0];
    write_over_read.push_back(d.write / d.read);

    std::string attune_cols = "| - | - | - | - |";
    auto w = winners.find(fmt::format("{}x{}x{}", s.m, s.n, s.k));
    if (w != winners.end()) {
      Config config = must(Config::parse(w->second), "winner config");
      auto plan = must(kernels::plan_gemm(problem, config), "winner plan");
      Times t;
      if (auto* kp = std::get_if<kernels::KernelPlan>(&plan)) {
        BuildResult built = must(compiler.build(kp->build), "winner build");
        if (!built.ok) die("winner does not build: " + built.log);
        Module module = must(Module::load(built.cubin), "winner module");
        std::vector<CUfunction> fns;
        for (const auto& step : kp->steps) {
          auto l = built.lowered_names.find(step.kernel);
          fns.push_back(must(
              module.function(l == built.lowered_names.end() ? step.kernel : l->second), "kernel"));
          if (step.shared_bytes > 48 * 1024)
            (void)must(check_launch(fns.back(), step.block.x * step.block.y * step.block.z,
                                    step.shared_bytes, lim.max_shared_per_block_optin),
                       "shared memory");
        }
        auto ws =
            must(DeviceBuffer::alloc(std::max<std::size_t>(kp->workspace_bytes, 16)), "workspace");
        kernels::PlanArgs args;
        args.a = a.ptr();
        args.b = b.ptr();
        args.c = c.ptr();
        args.workspace = ws.ptr();
        t = time3([&](CUstream st) { return kernels::enqueue(*kp, fns, args, st); });
      } else {
        kernels::LtChoice found =
            kernels::choose_lt_algo(lt, prob, std::get<kernels::LtPlan>(plan));
        if (!found.algo) die("winner refused by cuBLASLt: " + found.refusal);
        t = time3(lt_launch(*found.algo));
      }
      // attune's winner against the default, and against every heuristic algorithm's best.
      const double rw = d.write / std::min(t.write, algos[bwr].write),
                   rr = d.read / std::min(t.read, algos[brd].read);
      ratio_write.push_back(rw);
      ratio_read.push_back(rr);
      attune_cols = fmt::format("| {:.2f} | {:.2f} | {:.3f} | {:.3f} |", t.write, t.read, rw, rr);
    }
    std::printf(
        "| %lld | %lld | %lld | %zu | %.2f | %.2f | %.2f | %.3f | %zu/%zu/%zu | %+.1f%%, %+.1f%% "
        "%s\n",
        static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
        algos.size(), d.warm, d.write, d.read, d.write / d.read, bw, bwr, brd, 100 * cw, 100 * cr,
        attune_cols.c_str());
    std::fflush(stdout);
  }
  cublasLtDestroy(lt);
  auto max_of = [](const std::vector<double>& v) {
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  };
  std::printf("\ncuBLASLt default, memset flush / read flush: geomean %.3f over %zu shapes\n",
              geomean(write_over_read), write_over_read.size());
  std::printf(
      "warm-time cost of the cold-fastest heuristic algorithm: max %+.1f%% (memset flush), %+.1f%% "
      "(read flush)\n",
      100 * max_of(cost_write), 100 * max_of(cost_read));
  if (!ratio_write.empty())
    std::printf(
        "default / min(attune winner, best heuristic): geomean %.3f (memset flush), %.3f (read "
        "flush) over %zu shapes\n",
        geomean(ratio_write), geomean(ratio_read), ratio_write.size());
  return 0;
}
