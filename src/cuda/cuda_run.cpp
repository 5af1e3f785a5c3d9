#include "cuda/cuda_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/nvml.h"

namespace attune::kernels {
extern const char* const kL2FlushSource;
}  // namespace attune::kernels

namespace attune::cuda {

Result<DeviceBuffer> DeviceBuffer::alloc(size_t bytes) {
  DeviceBuffer b;
  ATTUNE_CU(cuMemAlloc(&b.ptr_, std::max<size_t>(bytes, 16)));
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cuMemFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cuMemFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

Status DeviceBuffer::upload(const void* host, size_t bytes, CUstream s) {
  ATTUNE_CU(cuMemcpyHtoDAsync(ptr_, host, bytes, s));
  ATTUNE_CU(cuStreamSynchronize(s));
  return Status::success();
}

Status DeviceBuffer::download(void* host, size_t bytes, CUstream s) const {
  ATTUNE_CU(cuMemcpyDtoHAsync(host, ptr_, bytes, s));
  ATTUNE_CU(cuStreamSynchronize(s));
  return Status::success();
}

Status DeviceBuffer::fill16(unsigned short bits, CUstream s) {
  ATTUNE_CU(cuMemsetD16Async(ptr_, bits, bytes_ / 2, s));
  return Status::success();
}

Status DeviceBuffer::fill32(unsigned bits, CUstream s) {
  ATTUNE_CU(cuMemsetD32Async(ptr_, bits, bytes_ / 4, s));
  return Status::success();
}

TimingOptions timing_options(Regime regime) {
  TimingOptions o;
  if (regime == Regime::kRank) {
    o.policy.min_samples = 5;
    o.policy.noise_bound = 0.01;
    o.policy.time_cap_s = 0.3;
  } else {
    // At least 50: a deploy sample costs ~0.1 ms, and the noise estimate of 10 quantized event
    // timings was overconfident. On the H200 a 2 us rmsnorm's best of 6 candidates, stopped at 10
    // samples, recorded 1.82 us where libattune-rt's verify then measured 2.37 us and the other
    // five 2.13-2.40 us: the search keeps whichever candidate drew the luckiest ten.
    o.policy.min_samples = 50;
    o.policy.noise_bound = 0.005;
    o.policy.time_cap_s = 1.0;
  }
  return o;
}

constexpr unsigned kFlushThreads = 512;  // per block of the read flush; 4 blocks per SM

Result<L2Flush> L2Flush::create(const Compiler& compiler, std::int64_t l2_bytes, int sm_count,
                                FlushKind kind) {
  L2Flush f;
  f.kind_ = kind;
  // Twice the L2, so one pass evicts whatever a candidate left there.
  ATTUNE_ASSIGN(f.buffer_,
                DeviceBuffer::alloc(std::max<size_t>(2 * static_cast<size_t>(l2_bytes), 64 << 20)));
  ATTUNE_CU(cuMemsetD32(f.buffer_.ptr(), 0, f.buffer_.bytes() / 4));
  ATTUNE_ASSIGN(f.sink_, DeviceBuffer::alloc(16));
  ATTUNE_ASSIGN(BuildResult built,
                compiler.build(BuildRequest{kernels::kL2FlushSource, "l2_flush.cu"}));
  if (!built.ok) return Error::internal("the L2 flush kernel did not build: " + built.log);
  ATTUNE_ASSIGN(f.module_, Module::load(built.cubin));
  ATTUNE_ASSIGN(f.read_, f.module_.function("attune_l2_flush_read"));
  ATTUNE_ASSIGN(f.lead_, f.module_.function("attune_graph_lead"));
  f.blocks_ = static_cast<unsigned>(std::max(sm_count, 1)) * 4;
  return f;
}

Status L2Flush::run(CUstream s) {
  if (kind_ == FlushKind::kWrite) return buffer_.fill32(0, s);
  CUdeviceptr p = buffer_.ptr(), sink = sink_.ptr();
  unsigned long long words = buffer_.bytes() / 16;
  void* params[] = {&p, &words, &sink};
  ATTUNE_CU(cuLaunchKernel(read_, blocks_, 1, 1, kFlushThreads, 1, 1, 0, s, params, nullptr));
  return Status::success();
}

CUresult L2Flush::lead(CUstream s) const {
  return cuLaunchKernel(lead_, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
}

Result<Module> Module::load(const std::string& cubin) {
  Module m;
  ATTUNE_CU(cuModuleLoadData(&m.m_, cubin.data()));
  return m;
}

Module::~Module() {
  if (m_) cuModuleUnload(m_);
}

Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (m_) cuModuleUnload(m_);
    m_ = o.m_;
    o.m_ = nullptr;
  }
  return *this;
}

Result<CUfunction> Module::function(const std::string& symbol) const {
  CUfunction f = nullptr;
  ATTUNE_CU(cuModuleGetFunction(&f, m_, symbol.c_str()));
  return f;
}

Result<FunctionResources> resources(CUfunction f) {
  FunctionResources r;
  ATTUNE_CU(cuFuncGetAttribute(&r.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  ATTUNE_CU(
      cuFuncGetAttribute(&r.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  ATTUNE_CU(cuFuncGetAttribute(&r.static_shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
  ATTUNE_CU(cuFuncGetAttribute(&r.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f));
  return r;
}

namespace {

// The largest cluster every cluster-capable device runs; past it the kernel must opt in.
constexpr int kPortableClusterBlocks = 8;

// A kernel compiled with __cluster_dims__ (attune_cluster.cuh): past the portable size it opts in
// to non-portable sizes (refused where the device has none), then asks the driver whether at
// least one such cluster fits the device at this block size and shared memory.
Result<std::string> check_cluster(CUfunction f, unsigned threads, unsigned dynamic_smem) {
  int dims[3] = {0, 0, 0};
  // Every kernel passes through here: one whose cluster size the driver cannot report (a device
  // or driver without clusters) launches as it did before this check existed.
  if (cuFuncGetAttribute(&dims[0], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f) != CUDA_SUCCESS ||
      cuFuncGetAttribute(&dims[1], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f) != CUDA_SUCCESS ||
      cuFuncGetAttribute(&dims[2], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f) != CUDA_SUCCESS)
    return std::string();
  const int blocks = std::max(dims[0], 1) * std::max(dims[1], 1) * std::max(dims[2], 1);
  if (blocks <= kPortableClusterBlocks) return std::string();
  if (CUresult rc = cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
      rc != CUDA_SUCCESS)
    return fmt::format(
        "a thread block cluster of {} blocks is past the portable {}, and the device allows no "
        "more ({})",
        blocks, kPortableClusterBlocks,
        driver_error(rc, "cuFuncSetAttribute", __FILE__, __LINE__).message());
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(std::max(dims[0], 1));
  config.gridDimY = static_cast<unsigned>(std::max(dims[1], 1));
  config.gridDimZ = static_cast<unsigned>(std::max(dims[2], 1));
  config.blockDimX = threads;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = dynamic_smem;
  int clusters = 0;
  if (CUresult rc = cuOccupancyMaxActiveClusters(&clusters, f, &config); rc != CUDA_SUCCESS)
    return fmt::format(
        "a thread block cluster of {} blocks cannot be scheduled ({})", blocks,
        driver_error(rc, "cuOccupancyMaxActiveClusters", __FILE__, __LINE__).message());
  if (clusters < 1)
    return fmt::format(
        "a thread block cluster of {} blocks of {} threads and {} bytes of dynamic shared memory "
        "does not fit the device at once",
        blocks, threads, dynamic_smem);
  return std::string();
}

}  // namespace

Result<std::string> check_launch(CUfunction f, unsigned threads, unsigned dynamic_smem,
                                 int max_smem_optin) {
  ATTUNE_ASSIGN(FunctionResources r, resources(f));
  if (static_cast<int>(threads) > r.max_threads_per_block)
    return fmt::format(
        "{} threads per block, but the compiled kernel ({} registers per thread) allows at most {}",
        threads, r.registers, r.max_threads_per_block);
  const long total = static_cast<long>(dynamic_smem) + r.static_shared_bytes;
  if (total > max_smem_optin)
    return fmt::format(
        "{} bytes of shared memory per block ({} static + {} dynamic), the device allows {}", total,
        r.static_shared_bytes, dynamic_smem, max_smem_optin);
  if (dynamic_smem > 48 * 1024)
    ATTUNE_CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(dynamic_smem)));
  return check_cluster(f, threads, dynamic_smem);
}

void exit_if_sticky(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS || !is_sticky(rc)) return;
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(rc, &name);
  cuGetErrorString(rc, &text);
  std::fprintf(stderr, "%s: %s (%s); the CUDA context is lost\n", what, name ? name : "?",
               text ? text : "?");
  std::fflush(stderr);
  std::_Exit(70);
}

namespace {

struct EventDestroy {
  void operator()(CUevent e) const { cuEventDestroy(e); }
};
using Event = std::unique_ptr<CUevent_st, EventDestroy>;

Result<Event> make_event() {
  CUevent e = nullptr;
  ATTUNE_CU(cuEventCreate(&e, CU_EVENT_DEFAULT));
  return Event(e);
}

// Warm-up before sampling: at least this long, at most this many replays.
constexpr int kWarmupMs = 20;
constexpr int kMaxWarmups = 2000;

struct GraphDestroy {
  void operator()(CUgraph g) const { cuGraphDestroy(g); }
  void operator()(CUgraphExec e) const { cuGraphExecDestroy(e); }
};
using GraphExec = std::unique_ptr<CUgraphExec_st, GraphDestroy>;

// `count` launches captured as one CUDA graph (every kernel a plan or cuBLASLt enqueues), as a
// production decode loop replays them; nullptr when something in it cannot be captured.
GraphExec capture(const std::function<CUresult(CUstream)>& launch, CUstream stream, int count) {
  if (cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
    return nullptr;
  CUresult launched = CUDA_SUCCESS;
  for (int i = 0; i < count && launched == CUDA_SUCCESS; ++i) launched = launch(stream);
  CUgraph graph = nullptr;
  const CUresult ended = cuStreamEndCapture(stream, &graph);
  std::unique_ptr<CUgraph_st, GraphDestroy> owner(graph);
  if (launched != CUDA_SUCCESS || ended != CUDA_SUCCESS || !graph) return nullptr;
  CUgraphExec exec = nullptr;
  if (cuGraphInstantiate(&exec, graph, 0) != CUDA_SUCCESS) return nullptr;
  return GraphExec(exec);
}

// The time between `start` and `stop` once `stop` is reached; an error that poisons the context
// ends the process (exit_if_sticky, saying what was being timed).
Result<double> elapsed_us(const Event& start, const Event& stop, const char* what = "timing") {
  CUresult rc = cuEventSynchronize(stop.get());
  exit_if_sticky(rc, what);
  ATTUNE_CU(rc);
  float ms = 0;
  ATTUNE_CU(cuEventElapsedTime(&ms, start.get(), stop.get()));
  return ms * 1000.0;
}

}  // namespace

Result<Measurement> time_kernel(const std::function<CUresult(CUstream)>& launch, CUstream stream,
                                Regime regime, L2Flush& flush, const TimingOptions& options,
                                const std::string& pci_bus_id) {
  ATTUNE_ASSIGN(Event start, make_event());
  ATTUNE_ASSIGN(Event stop, make_event());
  // Warm-up: module load, first-launch costs and clocks ramping stay out of the numbers.
  for (int i = 0; i < 3; ++i) ATTUNE_CU(launch(stream));
  ATTUNE_CU(cuEventRecord(start.get(), stream));
  ATTUNE_CU(launch(stream));
  ATTUNE_CU(cuEventRecord(stop.get(), stream));
  ATTUNE_ASSIGN(double one, elapsed_us(start, stop));
  int reps = 1;
  if (regime == Regime::kRank)
    reps = static_cast<int>(std::clamp(options.target_sample_us / std::max(one, 0.5), 1.0, 1000.0));
  // Each sample replays a graph: rank, `reps` back-to-back launches; deploy, one launch after the
  // L2 flush. Without the graph, the host's enqueue cost (several us per cublasLtMatmul) is what a
  // back-to-back loop of a ~8 us kernel measures, and it moved with the CPU load of the compile
  // threads: the H200 gemm bench's anchor "drifted" by 10-30% on a quiet GPU. A launch that cannot
  // be captured is timed directly.
  //
  // Deploy: a graph of launch() alone pays a launch that a kernel behind another kernel in a
  // graph does not. On the H200 each kernel of a Qwen3 layer took 1.6-2.9 us more alone than in
  // the layer's graph, so a 1 x 128 layer's kernels summed to 55.7 us against 40.7 us for its
  // graph (bench/results/layer-h200-2026-12-04d.md). So launch() runs behind the lead (an empty
  // kernel), and the median of the lead's own graph, timed before each sample on a cold L2 too, is
  // subtracted from the samples' median: what the kernel adds to a graph, as in production, and
  // comparable between a slice and a layer. The stopping rule reads the led graph's samples (the
  // candidate's time plus ~3 us), not a per-sample difference of two timings, whose relative noise
  // on a 2 us kernel would reach 0.5% only at the cap.
  GraphExec graph, lead_graph;
  if (regime == Regime::kDeploy) {
    const auto led = [&](CUstream st) -> CUresult {
      if (CUresult rc = flush.lead(st); rc != CUDA_SUCCESS) return rc;
      return launch(st);
    };
    graph = capture(led, stream, 1);
    if (graph) lead_graph = capture([&](CUstream st) { return flush.lead(st); }, stream, 1);
    if (!lead_graph) graph.reset();
  } else {
    graph = capture(launch, stream, reps);
  }
  // Warm-up by time, not count: module load, first-launch costs and the clocks' ramp after idle
  // periods (compiles, back-offs) stay out of the numbers.
  {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWarmupMs);
    for (int i = 0; i < kMaxWarmups && std::chrono::steady_clock::now() < until; ++i) {
      if (graph) {
        ATTUNE_CU(cuGraphLaunch(graph.get(), stream));
      } else {
        ATTUNE_CU(launch(stream));
      }
      CUresult rc = cuStreamSynchronize(stream);
      exit_if_sticky(rc, "warm-up");
      ATTUNE_CU(rc);
    }
  }

  Error failure = Error::internal("");
  bool failed = false;
  std::vector<double> lead_samples;
  auto sample = [&]() -> double {
    if (failed) return 0;
    auto run = [&]() -> Result<double> {
      if (lead_graph) {
        ATTUNE_TRY(flush.run(stream));
        ATTUNE_CU(cuEventRecord(start.get(), stream));
        ATTUNE_CU(cuGraphLaunch(lead_graph.get(), stream));
        ATTUNE_CU(cuEventRecord(stop.get(), stream));
        ATTUNE_ASSIGN(double lead_us, elapsed_us(start, stop));
        lead_samples.push_back(lead_us);
      }
      if (regime == Regime::kDeploy) ATTUNE_TRY(flush.run(stream));
      ATTUNE_CU(cuEventRecord(start.get(), stream));
      if (graph) {
        ATTUNE_CU(cuGraphLaunch(graph.get(), stream));
      } else {
        for (int i = 0; i < reps; ++i) ATTUNE_CU(launch(stream));
      }
      ATTUNE_CU(cuEventRecord(stop.get(), stream));
      ATTUNE_ASSIGN(double us, elapsed_us(start, stop));
      return lead_graph ? us : us / reps;
    };
    auto r = run();
    if (!r) {
      failure = r.error();
      failed = true;
      return 0;
    }
    return *r;
  };
  SampleStats s = sample_until_stable(sample, options.policy);
  if (failed) return failure;
  ClockReading clocks = read_clocks(pci_bus_id);  // read right after the samples, clocks still up
  if (lead_graph) s = less_baseline(s, summarize(lead_samples));
  Measurement m = measurement_of(s, regime);
  m.sm_clock_mhz = clocks.sm_clock_mhz;
  m.throttle = clocks.throttle;
  return m;
}

Result<std::vector<double>> time_prefixes(
    const std::vector<std::function<CUresult(CUstream)>>& steps,
    const std::function<CUresult(CUstream)>& lead, CUstream stream, L2Flush& flush, int samples) {
  ATTUNE_ASSIGN(Event start, make_event());
  ATTUNE_ASSIGN(Event stop, make_event());
  std::vector<GraphExec> graphs;
  for (std::size_t k = 0; k <= steps.size(); ++k) {
    auto prefix = [&](CUstream st) -> CUresult {
      if (CUresult rc = lead(st); rc != CUDA_SUCCESS) return rc;
      for (std::size_t i = 0; i < k; ++i)
        if (CUresult rc = steps[i](st); rc != CUDA_SUCCESS) return rc;
      return CUDA_SUCCESS;
    };
    GraphExec g = capture(prefix, stream, 1);
    if (!g) return Error::internal(fmt::format("the chain's first {} steps cannot be captured", k));
    graphs.push_back(std::move(g));
  }
  // Rounds of one replay of each graph, so a drift of the clocks moves every prefix alike.
  std::vector<std::vector<double>> times(graphs.size());
  for (int round = -3; round < std::max(samples, 1); ++round) {  // three warm-up rounds
    for (std::size_t k = 0; k < graphs.size(); ++k) {
      ATTUNE_TRY(flush.run(stream));
      ATTUNE_CU(cuEventRecord(start.get(), stream));
      ATTUNE_CU(cuGraphLaunch(graphs[k].get(), stream));
      ATTUNE_CU(cuEventRecord(stop.get(), stream));
      ATTUNE_ASSIGN(double us, elapsed_us(start, stop, "timing the chain's prefixes"));
      if (round >= 0) times[k].push_back(us);
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& v : times) medians.push_back(summarize(std::move(v)).median);
  return medians;
}

}  // namespace attune::cuda
