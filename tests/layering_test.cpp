// The layering rule of DESIGN.md ("Layout"): a layer never includes from a layer above it. Every
// source file under src/ is read and each of its project includes checked against the layers its
// own layer may use, so a new upward include fails here, naming the file, line and both layers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Each layer's direct dependencies, as DESIGN.md lists them; a layer may use what those use too.
// "cuda" is the CUDA host layer (src/cuda/: checked calls, NVML, the device fingerprint, buffers,
// modules, timing, NVRTC builds) that the CUDA backend's plugin and libattune-rt share; "attune"
// is the public API in include/attune/.
const std::map<std::string, std::set<std::string>>& layer_deps() {
  static const std::map<std::string, std::set<std::string>> deps = {
      {"core", {}},
      {"platform", {"core"}},
      {"store", {"core", "platform"}},
      {"measure", {"core", "platform"}},
      {"verify", {"core"}},
      {"search", {"core"}},
      {"prior", {"core"}},
      {"cuda", {"core", "measure"}},
      {"backends", {"core", "platform", "measure", "verify", "cuda"}},
      {"kernels", {"backends", "cuda"}},
      {"graph", {"core", "kernels"}},
      {"tune", {"search", "prior", "store", "backends", "table", "graph"}},
      {"table", {"core", "platform", "store"}},
      {"ab", {"core", "platform", "measure"}},
      {"runtime", {"core", "table", "kernels", "cuda", "attune"}},
      {"attune", {}},
      {"report", {"tune", "table"}},
      {"cli", {"report", "tune", "table", "ab", "runtime", "graph", "kernels"}},
  };
  return deps;
}

// What a layer must never use even where its dependencies do: libattune-rt is linked into users'
// programs and carries "no store, no search, no CLI" (DESIGN.md), though the table folder it reads
// tables with also holds `attune export`, which reads the store.
const std::map<std::string, std::set<std::string>>& layer_forbidden() {
  static const std::map<std::string, std::set<std::string>> forbidden = {
      {"runtime", {"store", "search", "prior", "tune", "report", "cli"}},
  };
  return forbidden;
}

std::set<std::string> allowed(const std::string& layer) {
  std::set<std::string> out{layer};
  std::vector<std::string> todo{layer};
  while (!todo.empty()) {
    const std::string l = todo.back();
    todo.pop_back();
    auto it = layer_deps().find(l);
    if (it == layer_deps().end()) continue;
    for (const auto& d : it->second)
      if (out.insert(d).second) todo.push_back(d);
  }
  if (auto f = layer_forbidden().find(layer); f != layer_forbidden().end())
    for (const auto& d : f->second) out.erase(d);
  return out;
}

// The layer of a path relative to src/ (or of an include's target): its first folder.
std::string layer_of(const std::string& rel) {
  return rel.substr(0, rel.find('/'));
}

TEST(Layering, NoLayerIncludesALayerAboveIt) {
  const fs::path src = fs::path(ATTUNE_SOURCE_DIR) / "src";
  const std::regex include(R"re(^\s*#\s*include\s+"([a-z_]+/[^"]+)")re");
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".cuh")) continue;
    const std::string rel = fs::relative(entry.path(), src).generic_string();
    const std::string layer = layer_of(rel);
    ASSERT_TRUE(layer_deps().count(layer))
        << rel << ": layer '" << layer << "' is not in DESIGN.md's layout (add it to this test)";
    const std::set<std::string> ok = allowed(layer);
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const std::string target = m[1].str();
      // Only project headers: src/<layer>/... or include/attune/...
      if (!fs::exists(src / target) && !fs::exists(src.parent_path() / "include" / target))
        continue;
      const std::string to = layer_of(target);
      EXPECT_TRUE(ok.count(to)) << "src/" << rel << ":" << n << " (layer " << layer << ") includes "
                                << target << " (layer " << to << ")";
    }
  }
  EXPECT_GT(files, 100);  // the walk found the tree
}

TEST(Layering, TheRuleRefusesAnUpwardInclude) {
  // The rule itself: lower layers may not use higher ones; the CUDA host layer is below backends.
  EXPECT_FALSE(allowed("core").count("store"));
  EXPECT_FALSE(allowed("backends").count("kernels"));
  EXPECT_FALSE(allowed("runtime").count("store"));
  EXPECT_FALSE(allowed("runtime").count("tune"));
  EXPECT_TRUE(allowed("runtime").count("cuda"));
  EXPECT_EQ(layer_of("cuda/cuda_run.h"), "cuda");
  EXPECT_EQ(layer_of("backends/cuda/cuda_backend.h"), "backends");
}

}  // namespace
