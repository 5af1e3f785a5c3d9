#include "runtime/cuda/executor.h"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "cuda/cuda_check.h"

namespace attune::runtime {

namespace fs = std::filesystem;

namespace {

std::atomic<std::uint64_t> g_generation{0};

// The first lines of a compiler log, enough to say why.
std::string head(const std::string& log, std::size_t lines = 3) {
  std::size_t pos = 0;
  for (std::size_t i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = log.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  return pos == std::string::npos ? log : log.substr(0, pos - 1);
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

Result<std::unique_ptr<Executor>> Executor::open(int ordinal, const fs::path& cubin_dir) {
  std::unique_ptr<Executor> e(new Executor());
  ATTUNE_ASSIGN(e->fingerprint_, cuda::fingerprint(ordinal));
  ATTUNE_CU(cuDeviceGet(&e->dev_, ordinal));
  ATTUNE_ASSIGN(e->limits_, cuda::read_limits(e->dev_));
  CUcontext ctx = nullptr;
  ATTUNE_CU(cuDevicePrimaryCtxRetain(&ctx, e->dev_));
  e->ctx_ = ctx;
  ATTUNE_TRY(e->enter());
  ATTUNE_CUBLASLT(cublasLtCreate(&e->lt_));
  e->cubin_dir_ = cubin_dir;
  e->compiler_ = std::make_unique<cuda::Compiler>(e->fingerprint_.arch, cubin_dir);
  e->generation_ = ++g_generation;
  return e;
}

Executor::~Executor() {
  if (!ctx_) return;
  // Device memory and modules are released in the context they belong to.
  cuCtxPushCurrent(ctx_);
  launches_.clear();
  modules_.clear();
  workspaces_.clear();
  retired_.clear();
  if (lt_) cublasLtDestroy(lt_);
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
  cuDevicePrimaryCtxRelease(dev_);
}

Status Executor::enter_slow(CUcontext current) const {
  if (current == nullptr) {
    ATTUNE_CU(cuCtxSetCurrent(ctx_));
    return Status::success();
  }
  return Error::unsupported(
      fmt::format("another CUDA context is current on this thread; libattune-rt runs in device "
                  "{}'s primary context "
                  "(the one the CUDA runtime uses)",
                  fingerprint_.name));
}

Result<std::unique_ptr<Launch>> Executor::build_launch(const Problem& problem,
                                                       const std::string& config_text,
                                                       const kernels::PlanArgs& args,
                                                       DispatchRecord& rec, std::string* refusal) {
  std::unique_ptr<Launch> none;
  auto config = Config::parse(config_text);
  if (!config) {
    *refusal = config.error().message();
    return none;
  }
  auto launch = std::make_unique<Launch>();
  auto plan = kernels::plan(problem, *config);
  if (!plan) {
    *refusal = plan.error().message();
    return none;
  }
  if (const auto* lt = std::get_if<kernels::LtPlan>(&*plan)) {  // a cuBLASLt variant: gemm's
    ATTUNE_ASSIGN(kernels::GemmShape s, kernels::gemm_shape(problem));
    void* bias = s.bias ? reinterpret_cast<void*>(args.bias) : nullptr;
    ATTUNE_ASSIGN(kernels::LtProblem ltp,
                  kernels::make_lt(lt_, s, kernels::lt_type(s.bf16), s.bias, bias));
    kernels::LtChoice choice = kernels::choose_lt_algo(lt_, ltp, *lt);
    if (!choice.algo) {
      *refusal = choice.refusal;
      return none;
    }
    launch->algo = *choice.algo;
    launch->lt = std::move(ltp);
    launch->lt_bias = s.bias;
    launch->workspace_bytes = kernels::kLtWorkspaceBytes;
    rec.cpp.kernels = {kernels::lt_description(launch->algo)};
    return launch;
  }
  if (auto* chain = std::get_if<kernels::ChainPlan>(&*plan)) {
    ATTUNE_TRY(kernels::check_args(*chain));
    std::vector<const kernels::LaunchStep*> steps;
    for (const kernels::ChainStep& step : chain->steps)
      if (const auto* k = std::get_if<kernels::LaunchStep>(&step)) steps.push_back(k);
    DispatchRecord loaded;
    ATTUNE_ASSIGN(std::vector<CUfunction> fns, load_steps(chain->build, steps, loaded, refusal));
    if (fns.size() != steps.size()) return none;
    ATTUNE_ASSIGN(std::optional<kernels::ChainLaunch> prepared,
                  kernels::prepare_chain(lt_, *chain, fns, refusal));
    if (!prepared) return none;
    // What runs, in chain order: the kernels by name, the matmuls by cuBLASLt's algorithm.
    for (std::size_t i = 0, k = 0; i < chain->steps.size(); ++i)
      rec.cpp.kernels.push_back(prepared->lt[i] ? kernels::lt_description(prepared->lt[i]->algo)
                                                : loaded.cpp.kernels[k++]);
    rec.cpp.cache_key = loaded.cpp.cache_key;
    launch->chain_launch = std::move(*prepared);
    launch->workspace_bytes = chain->workspace_bytes;
    launch->chain = std::move(*chain);
    return launch;
  }
  kernels::KernelPlan native = std::get<kernels::KernelPlan>(std::move(*plan));
  ATTUNE_ASSIGN(launch->binding, kernels::bind_args(native));
  std::vector<const kernels::LaunchStep*> steps;
  for (const kernels::LaunchStep& step : native.steps) steps.push_back(&step);
  ATTUNE_ASSIGN(launch->fns, load_steps(native.build, steps, rec, refusal));
  if (launch->fns.size() != steps.size()) return none;
  launch->workspace_bytes = native.workspace_bytes;
  launch->plan = std::move(native);
  return launch;
}

Result<std::vector<CUfunction>> Executor::load_steps(
    const cuda::BuildRequest& build, const std::vector<const kernels::LaunchStep*>& steps,
    DispatchRecord& rec, std::string* refusal) {
  const std::string cache_key = compiler_->cache_key(build);
  auto it = modules_.find(cache_key);
  if (it == modules_.end()) {
    ATTUNE_ASSIGN(cuda::BuildResult built, compiler_->build(build));
    if (!built.ok) {
      *refusal = "it does not compile: " + head(built.log);
      return std::vector<CUfunction>{};
    }
    ATTUNE_ASSIGN(cuda::Module module, cuda::Module::load(built.cubin));
    it = modules_.emplace(cache_key, LoadedModule{std::move(module), built.lowered_names}).first;
  }
  std::vector<CUfunction> fns;
  for (const kernels::LaunchStep* step : steps) {
    auto lowered = it->second.lowered.find(step->kernel);
    ATTUNE_ASSIGN(CUfunction fn, it->second.module.function(lowered == it->second.lowered.end()
                                                                ? step->kernel
                                                                : lowered->second));
    const unsigned threads = step->block.x * step->block.y * step->block.z;
    ATTUNE_ASSIGN(std::string why, cuda::check_launch(fn, threads, step->shared_bytes,
                                                      limits_.max_shared_per_block_optin));
    if (!why.empty()) {
      *refusal = step->kernel + ": " + why;
      return std::vector<CUfunction>{};
    }
    fns.push_back(fn);
    rec.cpp.kernels.push_back(step->kernel);
  }
  rec.cpp.cache_key = cache_key;
  return fns;
}

Result<Launch*> Executor::prepare(Selector& selector, Slot& slot, const kernels::PlanArgs& args) {
  std::lock_guard lock(mu_);
  if (void* l = slot.exec.load(std::memory_order_acquire)) return static_cast<Launch*>(l);
  ATTUNE_TRY(enter());
  ATTUNE_ASSIGN(const Problem problem, problem_of(slot.key));
  // The op's own rules on its sizes together (attention_decode: head sizes, grouped-query heads),
  // once per shape: a call its kernels are not written for fails instead of running.
  const OpSignature& op = *signature_of(slot.key.op);
  if (op.check) ATTUNE_TRY(op.check(problem));
  const std::string baseline = op.baseline_config;
  auto rec = std::make_unique<DispatchRecord>();
  std::string why = slot.why;
  std::unique_ptr<Launch> launch;
  const IndexedRow* row = slot.row.load(std::memory_order_acquire);
  if (row) {
    std::string refusal;
    ATTUNE_ASSIGN(launch, build_launch(problem, row->row->config, args, *rec, &refusal));
    if (!launch) {
      selector.demote(slot, refusal);
      why = "row refused at first use: " + refusal;
      row = nullptr;
      *rec = DispatchRecord{};
    }
  }
  if (!row) {
    std::string refusal;
    ATTUNE_ASSIGN(launch, build_launch(problem, baseline, args, *rec, &refusal));
    if (!launch)
      return Error::unsupported(
          fmt::format("the baseline cannot run {}: {}", slot.problem, refusal));
  }
  rt::Dispatch& d = rec->cpp;
  d.tuned = row != nullptr;
  d.row = row ? row->number : 0;
  d.why = why;
  d.problem = slot.problem;
  d.backend = row ? row->row->backend : "cuda";
  d.config = row ? row->row->config : baseline;
  rec->kernels_joined = join(d.kernels, ";");
  rec->c = attune_rt_dispatch{d.tuned ? 1 : 0,
                              d.row,
                              d.why.c_str(),
                              d.problem.c_str(),
                              d.backend.c_str(),
                              d.config.c_str(),
                              rec->kernels_joined.c_str(),
                              d.cache_key.c_str()};
  launch->record = rec.get();
  records_.push_back(std::move(rec));
  Launch* out = launch.get();
  launches_.push_back(std::move(launch));
  slot.exec.store(out, std::memory_order_release);
  return out;
}

Result<CUdeviceptr> Executor::workspace(CUstream stream, std::size_t bytes) {
  // A few (executor, stream) -> buffer answers per thread, so a call takes no lock once its
  // stream's workspace is big enough.
  struct Cached {
    std::uint64_t generation = 0;
    CUstream stream = nullptr;
    CUdeviceptr ptr = 0;
    std::size_t bytes = 0;
  };
  constexpr int kCached = 4;
  thread_local Cached cached[kCached];
  thread_local int next = 0;
  for (const Cached& c : cached)
    if (c.generation == generation_ && c.stream == stream && c.bytes >= bytes) return c.ptr;
  std::lock_guard lock(mu_);
  // The per-thread default stream is one handle for many streams: a workspace per thread.
  const auto key = std::make_pair(
      stream, stream == CU_STREAM_PER_THREAD ? std::this_thread::get_id() : std::thread::id());
  cuda::DeviceBuffer& buf = workspaces_[key];
  if (buf.bytes() < bytes) {
    ATTUNE_ASSIGN(cuda::DeviceBuffer bigger,
                  cuda::DeviceBuffer::alloc(std::max(bytes, 2 * buf.bytes())));
    if (buf.ptr()) retired_.push_back(std::move(buf));
    buf = std::move(bigger);
  }
  for (Cached& c : cached)
    if (c.generation == generation_ && c.stream == stream) c.generation = 0;  // outgrown
  cached[next] = Cached{generation_, stream, buf.ptr(), buf.bytes()};
  next = (next + 1) % kCached;
  return buf.ptr();
}

Status Executor::run(Launch& launch, kernels::PlanArgs& args, CUstream stream) {
  if (launch.workspace_bytes) {
    ATTUNE_ASSIGN(args.workspace, workspace(stream, launch.workspace_bytes));
  }
  if (launch.plan) {
    ATTUNE_CU(kernels::enqueue(*launch.plan, launch.binding, launch.fns, args, stream));
    return Status::success();
  }
  if (launch.chain) {
    ATTUNE_CU(kernels::enqueue(lt_, *launch.chain, launch.chain_launch, args, stream));
    return Status::success();
  }
  void* a = reinterpret_cast<void*>(args.a);
  void* b = reinterpret_cast<void*>(args.b);
  void* c = reinterpret_cast<void*>(args.c);
  void* ws = reinterpret_cast<void*>(args.workspace);
  // A residual (gemm residual=1; args.r is set by no other cuBLASLt call) is cuBLASLt's beta 1;
  // a bias is a pointer in the shared descriptor, so setting it and enqueueing hold the lock.
  void* residual = reinterpret_cast<void*>(args.r);
  std::unique_lock<std::mutex> lock;
  if (launch.lt_bias) {
    lock = std::unique_lock(launch.lt_mu);
    void* bias = reinterpret_cast<void*>(args.bias);
    ATTUNE_CUBLASLT(cublasLtMatmulDescSetAttribute(
        launch.lt->desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  ATTUNE_CUBLASLT(kernels::lt_matmul(lt_, *launch.lt, launch.algo, a, b, c, ws, stream, residual));
  return Status::success();
}

}  // namespace attune::runtime
