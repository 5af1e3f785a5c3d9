// The tuned file (tuned/<device-slug>.yaml): the fingerprint and, per provider, the winning knobs,
// throughputs, speedup and every rejection with its reason; and the same as a report or JSON.
// Pure functions, except write_tuned/load_tuned, which touch only the file named. Thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "platform/host.h"
#include "stack/tune.h"

namespace attune::stack {

using platform::GpuInfo;

// The YAML text of a tune result.
std::string tuned_yaml(const TuneResult& result);
// Writes tuned_yaml to path (parent directories created; written to a temporary file and renamed
// so a reader never sees half a file).
Status write_tuned(const TuneResult& result, const std::string& path);
// The same as JSON (the --json report), with the tuned file's path.
nlohmann::json tuned_json(const TuneResult& result, const std::string& tuned_path);
// The human report: per provider baseline -> tuned, speedup, winning knobs, rejections.
std::string format_report(const TuneResult& result);

struct TunedProvider {
  std::string name;
  std::map<std::string, std::string> knobs;  // the winning knobs as written
  int line = 0;
};

struct TunedFile {
  std::string path;
  std::string stack;
  HostFingerprint fingerprint;
  std::vector<TunedProvider> providers;
  const TunedProvider* provider(const std::string& name) const;
};

// Reads what `stack run` needs from a tuned file; malformed files are invalid_argument errors
// worded "PATH:LINE: what is wrong".
Result<TunedFile> load_tuned(const std::string& path);

}  // namespace attune::stack
