// Kernel builds with NVRTC for the device's exact architecture, and an on-disk cache of the
// compiled code keyed by source hash, options, NVRTC version and architecture: a second run
// compiles nothing. Compiler is thread-safe (NVRTC programs are per call; cache files are written
// to a temporary name and renamed). CompilePool runs builds on threads ahead of the GPU.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"

namespace attune::cuda {

struct BuildRequest {
  std::string source;
  std::string source_name = "kernel.cu";
  std::vector<std::string> options;           // -D defines, -std=c++17, ...; the arch is added
  std::vector<std::string> name_expressions;  // kernels to look up (template-ids allowed)
  // Headers the source includes by name ("attune_cluster.cuh"), given as text: part of the
  // cache key, like the source.
  std::vector<std::pair<std::string, std::string>> headers;  // name, text
};

struct BuildResult {
  bool ok = false;
  std::string cubin;                                 // when ok
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled symbol
  std::string log;                                   // NVRTC's log (errors when !ok)
  bool from_cache = false;
};

class Compiler {
 public:
  // arch: "sm_90a"; cache_dir: where cubins live ("" disables the cache).
  Compiler(std::string arch, std::filesystem::path cache_dir);

  // A compile error is a BuildResult with ok == false and the log; an Error means NVRTC itself
  // failed (not the source).
  Result<BuildResult> build(const BuildRequest& request) const;
  // The cache key of a request: hash of source, options, name expressions, NVRTC version, arch.
  std::string cache_key(const BuildRequest& request) const;
  const std::string& arch() const { return arch_; }

 private:
  std::string arch_;
  std::filesystem::path cache_dir_;
  std::string nvrtc_version_;
};

// The default cache directory: $ATTUNE_CACHE_DIR, else $XDG_CACHE_HOME/attune/cubin, else
// ~/.cache/attune/cubin.
std::filesystem::path default_cache_dir();

class CompilePool {
 public:
  CompilePool(const Compiler& compiler, unsigned threads);
  ~CompilePool();
  std::shared_future<Result<BuildResult>> submit(BuildRequest request);
  // Drops the builds not yet started (their futures hold an error); returns how many.
  std::size_t drop_queued();

 private:
  const Compiler& compiler_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<BuildRequest, std::promise<Result<BuildResult>>>> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace attune::cuda
