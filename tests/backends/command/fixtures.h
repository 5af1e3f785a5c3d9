// Shared pieces of the stack tests: a scratch directory, file writing, the fake provider's path,
// and a scratch tuning database. Not thread-safe (tests are serial).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace attune::command::testing {

inline const std::string kFakeProvider =
    std::string(ATTUNE_SOURCE_DIR) + "/tests/backends/command/providers/fake_provider.sh";

class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "attune-stack-test-XXXXXX").string();
    path_ = ::mkdtemp(t.data()) ? t : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A fresh SQLite tuning database in a scratch directory, as `attune stack tune` writes one.
class TempStore {
 public:
  TempStore() : store_(open_store(dir_ / "attune.db", true).value()) {}
  Store& operator*() { return *store_; }
  Store* operator->() { return store_.get(); }
  std::string path() const { return dir_ / "attune.db"; }

 private:
  TempDir dir_;
  std::unique_ptr<Store> store_;
};

}  // namespace attune::command::testing
