#include "cuda/nvrtc_build.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "cuda/cuda_check.h"

namespace attune::cuda {

namespace fs = std::filesystem;

namespace {

struct ProgramDestroy {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Write to a unique temporary name, then rename: readers never see half a file.
void publish(const fs::path& p, const std::string& bytes) {
  fs::path tmp = p;
  tmp += fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << bytes;
    if (!out) return;
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
}

std::string toolkit_include_dir() {
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env)) return std::string(v) + "/include";
  return "/usr/local/cuda/include";
}

}  // namespace

Error nvrtc_error(nvrtcResult rc, const char* call, const char* file, int line) {
  return Error::internal(
      fmt::format("{} failed: {} [{}:{}]", call, nvrtcGetErrorString(rc), in_tree(file), line));
}

fs::path default_cache_dir() {
  if (const char* d = std::getenv("ATTUNE_CACHE_DIR")) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return fs::path(x) / "attune" / "cubin";
  if (const char* h = std::getenv("HOME")) return fs::path(h) / ".cache" / "attune" / "cubin";
  return fs::temp_directory_path() / "attune-cubin";
}

Compiler::Compiler(std::string arch, fs::path cache_dir)
    : arch_(std::move(arch)), cache_dir_(std::move(cache_dir)) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  nvrtc_version_ = fmt::format("{}.{}", major, minor);
  if (!cache_dir_.empty()) {
    std::error_code ec;
    fs::create_directories(cache_dir_, ec);
    if (ec) cache_dir_.clear();  // an unwritable cache is no cache, not a failure
  }
}

std::string Compiler::cache_key(const BuildRequest& r) const {
  std::string k = "nvrtc " + nvrtc_version_ + "\narch " + arch_ + "\n";
  for (const auto& o : r.options) k += "opt " + o + "\n";
  for (const auto& n : r.name_expressions) k += "name " + n + "\n";
  k += "source " + hex64(fnv1a64(r.source)) + "\n";
  for (const auto& [name, text] : r.headers)
    k += "header " + name + " " + hex64(fnv1a64(text)) + "\n";
  return hex64(fnv1a64(k)) + hex64(fnv1a64(k, 0x9e3779b97f4a7c15ULL));
}

Result<BuildResult> Compiler::build(const BuildRequest& r) const {
  const std::string key = cache_key(r);
  const fs::path cubin_path = cache_dir_.empty() ? fs::path() : cache_dir_ / (key + ".cubin");
  const fs::path meta_path = cache_dir_.empty() ? fs::path() : cache_dir_ / (key + ".json");
  if (!cache_dir_.empty() && fs::exists(cubin_path) && fs::exists(meta_path)) {
    auto meta = nlohmann::json::parse(slurp(meta_path), nullptr, false);
    if (!meta.is_discarded()) {
      BuildResult b;
      b.ok = meta.value("ok", false);
      b.log = meta.value("log", "");
      b.lowered_names = meta.value("lowered_names", std::map<std::string, std::string>{});
      b.cubin = slurp(cubin_path);
      b.from_cache = true;
      if (!b.ok || !b.cubin.empty()) return b;
    }
  }

  nvrtcProgram raw = nullptr;
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : r.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  ATTUNE_NVRTC(nvrtcCreateProgram(&raw, r.source.c_str(), r.source_name.c_str(),
                                  static_cast<int>(r.headers.size()), header_texts.data(),
                                  header_names.data()));
  std::unique_ptr<_nvrtcProgram, ProgramDestroy> prog(raw);
  for (const auto& n : r.name_expressions) ATTUNE_NVRTC(nvrtcAddNameExpression(raw, n.c_str()));
  std::vector<std::string> opts = r.options;
  opts.push_back("--gpu-architecture=" + arch_);
  opts.push_back("-I" + toolkit_include_dir());
  opts.push_back("--std=c++17");
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvrtcResult rc = nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());
  BuildResult b;
  size_t log_size = 0;
  nvrtcGetProgramLogSize(raw, &log_size);
  b.log.resize(log_size);
  if (log_size) nvrtcGetProgramLog(raw, b.log.data());
  while (!b.log.empty() && (b.log.back() == '\0' || b.log.back() == '\n')) b.log.pop_back();
  if (rc == NVRTC_SUCCESS) {
    size_t n = 0;
    ATTUNE_NVRTC(nvrtcGetCUBINSize(raw, &n));
    b.cubin.resize(n);
    ATTUNE_NVRTC(nvrtcGetCUBIN(raw, b.cubin.data()));
    for (const auto& name : r.name_expressions) {
      const char* lowered = nullptr;
      ATTUNE_NVRTC(nvrtcGetLoweredName(raw, name.c_str(), &lowered));
      b.lowered_names[name] = lowered;
    }
    b.ok = true;
  } else if (rc != NVRTC_ERROR_COMPILATION) {
    return nvrtc_error(rc, "nvrtcCompileProgram", __FILE__, __LINE__);
  }
  if (!cache_dir_.empty()) {
    // Compile errors are cached too: a second run does not compile a broken config again.
    nlohmann::json meta = {
        {"ok", b.ok}, {"log", b.log}, {"lowered_names", b.lowered_names}, {"arch", arch_}};
    publish(cubin_path, b.cubin);
    publish(meta_path, meta.dump());
  }
  return b;
}

CompilePool::CompilePool(const Compiler& compiler, unsigned threads) : compiler_(compiler) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    threads_.emplace_back([this] {
      while (true) {
        std::pair<BuildRequest, std::promise<Result<BuildResult>>> job;
        {
          std::unique_lock lk(mu_);
          cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
          if (queue_.empty()) return;
          job = std::move(queue_.front());
          queue_.pop_front();
        }
        job.second.set_value(compiler_.build(job.first));
      }
    });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::shared_future<Result<BuildResult>> CompilePool::submit(BuildRequest request) {
  std::promise<Result<BuildResult>> p;
  auto f = p.get_future().share();
  {
    std::lock_guard lk(mu_);
    queue_.emplace_back(std::move(request), std::move(p));
  }
  cv_.notify_one();
  return f;
}

std::size_t CompilePool::drop_queued() {
  std::deque<std::pair<BuildRequest, std::promise<Result<BuildResult>>>> dropped;
  {
    std::lock_guard lk(mu_);
    dropped.swap(queue_);
  }
  for (auto& job : dropped)
    job.second.set_value(Error::unsupported("build dropped: its search ended before it started"));
  return dropped.size();
}

}  // namespace attune::cuda
