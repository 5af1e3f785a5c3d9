#include "backends/registry.h"

#include "backends/sim/sim_backend.h"

namespace attune {

std::vector<std::string> backend_names() { return {"sim"}; }

Result<std::unique_ptr<Backend>> make_backend(const std::string& name) {
  if (name == "sim") return std::unique_ptr<Backend>(new SimBackend());
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  return Error::invalid_argument("unknown backend '" + name + "' (this attune has: " + known + ")");
}

std::string default_backend(std::string* why) {
  if (why) *why = "this attune was built without a GPU backend";
  return "sim";
}

}  // namespace attune
