#include "cli/common.h"

#include <unistd.h>

#include <climits>

#include <spdlog/spdlog.h>

#include "backends/registry.h"

namespace attune::cli {

std::unique_ptr<Store> open_store_or_report(const GlobalOptions& g, bool create_if_missing) {
  auto s = open_store(g.db, create_if_missing);
  if (!s) {
    bad_input(s.error().message());
    return nullptr;
  }
  return std::move(*s);
}

std::unique_ptr<Backend> open_backend_or_report(const std::string& name) {
  std::string chosen = name;
  if (chosen.empty()) {
    std::string why;
    chosen = default_backend(&why);
    if (!why.empty()) spdlog::warn("{}; using the '{}' backend", why, chosen);
  }
  auto b = make_backend(chosen);
  if (!b) {
    bad_input(b.error().message());
    return nullptr;
  }
  return std::move(*b);
}

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "attune";
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace attune::cli
