// Running candidates on the device: RAII device buffers and modules, resource checks decided
// before launch, and timing with CUDA events around graph replays (back-to-back launches in the
// rank regime; in the deploy regime an L2 flush, then one replay of the launch captured as a CUDA
// graph, per sample). One thread at a time.
#pragma once

#include <cuda.h>

#include <functional>
#include <string>

#include "core/error.h"
#include "core/measurement.h"
#include "cuda/nvrtc_build.h"
#include "measure/stats.h"

namespace attune::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Result<DeviceBuffer> alloc(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Status upload(const void* host, size_t bytes, CUstream s);
  Status download(void* host, size_t bytes, CUstream s) const;
  // Fills every 16-bit word with `bits` (bf16/fp16 NaN poison) or every 32-bit word.
  Status fill16(unsigned short bits, CUstream s);
  Status fill32(unsigned bits, CUstream s);

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

class Module {
 public:
  Module() = default;
  static Result<Module> load(const std::string& cubin);
  ~Module();
  Module(Module&& o) noexcept : m_(o.m_) { o.m_ = nullptr; }
  Module& operator=(Module&& o) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Result<CUfunction> function(const std::string& symbol) const;

 private:
  CUmodule m_ = nullptr;
};

// What a compiled kernel needs, checked against a launch before it happens.
struct FunctionResources {
  int registers = 0;
  int max_threads_per_block = 0;
  int static_shared_bytes = 0;
  int local_bytes = 0;
};
Result<FunctionResources> resources(CUfunction f);

// A reason this launch cannot run (too many threads for the compiled kernel's registers, more
// shared memory than the device allows, a thread block cluster the device cannot co-schedule), or
// "" when it can. Raises the function's dynamic shared memory limit when more than 48 KiB is
// asked, and opts a kernel compiled for a cluster past the portable 8 blocks into Hopper's
// non-portable sizes (up to 16).
Result<std::string> check_launch(CUfunction f, unsigned threads_per_block, unsigned dynamic_smem,
                                 int device_max_smem_optin);

// Ends the process (stderr says why) when a driver error poisons the context: the tuner records
// the candidate as crashed and continues in a fresh worker.
void exit_if_sticky(CUresult rc, const char* what);

// What leaves L2 cold before each deploy-regime sample: a buffer twice the L2 size streamed
// through it. kRead, the deploy regime's, reads the buffer and leaves L2 full of clean lines, as a
// decode loop's previous kernels leave their weights. kWrite memsets it (nvbench's and Triton's
// flush) and leaves L2 full of dirty lines, whose write-back to DRAM then lands inside the timed
// kernel: the more data a kernel reads, the more of L2's dirty lines it evicts and pays for.
enum class FlushKind { kRead, kWrite };

class L2Flush {
 public:
  // Builds the read kernel with `compiler` (cached on disk like any other build).
  static Result<L2Flush> create(const Compiler& compiler, std::int64_t l2_bytes, int sm_count,
                                FlushKind kind = FlushKind::kRead);
  // Enqueues one flush on the stream.
  Status run(CUstream s);
  // Enqueues the empty kernel a deploy sample's graph starts with (time_kernel).
  CUresult lead(CUstream s) const;

 private:
  FlushKind kind_ = FlushKind::kRead;
  DeviceBuffer buffer_;
  DeviceBuffer sink_;  // written only if the reads' checksum hits a value zeros never give
  Module module_;
  CUfunction read_ = nullptr;
  CUfunction lead_ = nullptr;
  unsigned blocks_ = 0;
};

struct TimingOptions {
  SamplingPolicy policy;
  double target_sample_us = 200;  // rank: launches per sample chosen to fill this much time
};

// The regime's sampling policy, as the tuner times candidates and libattune-rt times its calls:
// rank needs order, not the last digit (few samples, a short cap); deploy stops at 0.5% noise.
TimingOptions timing_options(Regime regime);

// Times launch() (which enqueues one run on the stream) in the given regime. Rank: back-to-back
// launches captured as one CUDA graph, warm. Deploy: what launch() adds to a CUDA graph behind
// another kernel, L2 cold: each sample flushes and replays a graph of flush.lead() alone, then
// flushes and replays a graph of flush.lead() and launch(); the median of the second less the
// median of the first (a direct launch, timed whole, when it cannot be captured).
Result<Measurement> time_kernel(const std::function<CUresult(CUstream)>& launch, CUstream stream,
                                Regime regime, L2Flush& flush, const TimingOptions& options,
                                const std::string& pci_bus_id);

// Where a chain's time goes in one CUDA graph: graph k holds `lead` (an empty kernel) and the
// chain's first k steps, k = 0..n; each is replayed after `flush` with events around its launch,
// in rounds of one replay of each, `samples` rounds. Returns the n + 1 medians: t[k] - t[k-1] is
// step k's time behind its predecessor in a graph (its inputs as the predecessor left them, and
// no launch of its own), t[0] the cost of launching a graph at all. Events placed inside the graph
// between the steps would not do: an event node makes the next kernel wait for its own launch (on
// the H200 a 1 x 128 Qwen3 layer's eight kernels took 58.8 us with them, 41.2 us without).
Result<std::vector<double>> time_prefixes(
    const std::vector<std::function<CUresult(CUstream)>>& steps,
    const std::function<CUresult(CUstream)>& lead, CUstream stream, L2Flush& flush, int samples);

}  // namespace attune::cuda
