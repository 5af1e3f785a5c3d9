#include "backends/registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "backends/plugin.h"
#include "backends/sim/sim_backend.h"

namespace attune {

std::string plugin_path(const std::string& file) {
  if (const char* d = std::getenv("ATTUNE_PLUGIN_DIR"))
    return (std::filesystem::path(d) / file).string();
  std::filesystem::path dir;
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0)
    dir = std::filesystem::path(std::string(buf, static_cast<std::size_t>(n))).parent_path();
  // A build tree has the plugin beside the binary; an installed tree under lib/attune/.
  std::error_code ec;
  if (std::filesystem::exists(dir / file, ec)) return (dir / file).string();
  const std::filesystem::path installed = (dir / ATTUNE_PLUGIN_RELDIR / file).lexically_normal();
  if (std::filesystem::exists(installed, ec)) return installed.string();
  return (dir / file).string();
}

namespace {

// The CUDA plugin sits beside the attune binary (or in $ATTUNE_PLUGIN_DIR). Loading it pulls in
// the driver (libcuda.so.1), NVRTC and cuBLASLt; where any is missing the backend is unavailable
// and dlerror says which. Its ABI version is checked before its factory is called: a plugin from
// another tree would otherwise be called through a vtable of another shape.
Result<std::unique_ptr<Backend>> load_cuda_plugin() {
  const std::string file = "libattune_cuda.so";
  const std::string path = plugin_path(file);
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return Error::unsupported(std::string("the cuda backend is unavailable: ") + dlerror());
  auto refuse = [h](const std::string& why) {
    dlclose(h);  // nothing but its ABI version was asked of it
    return Error::unsupported("the cuda backend is unavailable: " + why);
  };
  using Abi = decltype(&attune_plugin_abi);
  auto abi = reinterpret_cast<Abi>(dlsym(h, "attune_plugin_abi"));
  if (!abi)
    return refuse(
        fmt::format("{} names no plugin ABI (attune_plugin_abi) but this attune speaks {}: "
                    "rebuild both from one tree",
                    file, kPluginAbi));
  if (const int theirs = abi(); theirs != kPluginAbi)
    return refuse(
        fmt::format("{} speaks plugin ABI {} but this attune speaks {}: rebuild both from one tree",
                    file, theirs, kPluginAbi));
  using Make = decltype(&attune_make_cuda_backend);
  auto make = reinterpret_cast<Make>(dlsym(h, "attune_make_cuda_backend"));
  if (!make) return refuse(path + " has no entry point");
  std::string error;
  Backend* b = make(&error);
  if (!b) return Error::unsupported("the cuda backend failed to start: " + error);
  // The plugin stays loaded for the life of the process: the backend's code lives in it.
  return std::unique_ptr<Backend>(b);
}

}  // namespace

std::vector<std::string> backend_names() {
  return {"cuda", "sim"};
}

Result<std::unique_ptr<Backend>> make_backend(const std::string& name) {
  if (name == "sim") return std::unique_ptr<Backend>(new SimBackend());
  if (name == "cuda") return load_cuda_plugin();
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  return Error::invalid_argument("unknown backend '" + name + "' (this attune has: " + known + ")");
}

std::string default_backend(std::string* why) {
  auto cuda = load_cuda_plugin();
  if (cuda) {
    auto fp = (*cuda)->fingerprint();
    if (fp) {
      if (why) why->clear();
      return "cuda";
    }
    if (why) *why = "no usable GPU (" + fp.error().message() + ")";
    return "sim";
  }
  if (why) *why = cuda.error().message();
  return "sim";
}

}  // namespace attune
