// The flags that say how each problem is searched, shared by the commands that tune (attune
// sweep, and attune tune, which registers them with its own help and order): strategy, seed,
// patience, budget, pins, the deploy band, the drift guard and the limits, and the candidate
// runner they imply. Filled by CLI11, read on the calling thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "backends/backend.h"
#include "backends/runner.h"
#include "cli/commands.h"
#include "tune/tuner.h"

namespace attune::cli {

struct SearchFlags {
  std::string strategy = TuneOptions{}.strategy;  // attune tune's default
  std::uint64_t seed = 0;
  int patience = 50;
  std::int64_t max_candidates = 0;  // 0: none
  std::vector<std::string> pins;
  std::vector<std::string> strategy_options;  // NAME=VALUE
  double deploy_band = 0.5;
  int retime_best = TuneOptions{}.retime_best;
  int anchor_every = 8;
  double backoff_s = 1.0;
  int backoff_max_rounds = 12;
  double backoff_max_wait_s = 60;
  double time_limit_s = 0;  // 0: none
  double timeout_s = 0;     // 0: the backend's
};

// Adds the flags to `sub`, with attune tune's names, defaults and help.
void add_search_flags(CLI::App* sub, SearchFlags* f);
// The tune options the flags give, or the one line that says which flag is wrong.
Result<TuneOptions> search_options(const SearchFlags& f, const GlobalOptions& g);
// --pin knob=value texts as a map; the one line says which is not knob=value or pins a knob twice.
Result<std::map<std::string, std::string>> parse_pins(const std::vector<std::string>& pins);
// The runner of the backend's candidates: a worker process per candidate stream when the backend
// is isolated, else in this process.
std::unique_ptr<CandidateRunner> make_runner(Backend& backend, const SearchFlags& f);

}  // namespace attune::cli
