#include "cli/search_flags.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends/worker/worker.h"
#include "cli/common.h"
#include "search/strategy.h"

namespace attune::cli {

void add_search_flags(CLI::App* sub, SearchFlags* f) {
  std::string names;
  for (const auto& n : strategy_names()) names += (names.empty() ? "" : ", ") + n;
  sub->add_option("--strategy", f->strategy, "search strategy: " + names)->capture_default_str();
  sub->add_option("--seed", f->seed, "seed of the strategy")
      ->check(unsigned_integer())
      ->capture_default_str();
  sub->add_option("--patience", f->patience,
                  "stop after this many passing candidates without a new best; 0: never")
      ->capture_default_str();
  sub->add_option("--max-candidates", f->max_candidates,
                  "cap on candidates evaluated per problem, not counting variants refused before "
                  "any build (default: none)");
  sub->add_option(
      "--pin", f->pins,
      "knob=value every searched config must have (repeatable); the baseline is still measured");
  sub->add_option(
      "--strategy-option", f->strategy_options,
      "NAME=VALUE: an option of the strategy (repeatable); attune tune --strategy-option help "
      "lists them");
  sub->add_option("--deploy-band", f->deploy_band,
                  "re-measure in the deploy regime candidates within this fraction of the best "
                  "rank-regime time")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--retime-best", f->retime_best,
                  "after the search, time the configs with the best deploy times again until the "
                  "best N are all re-timed, and keep the new times (their first rows stay in "
                  "the database, discarded); 0: never")
      ->capture_default_str();
  sub->add_option("--anchor-every", f->anchor_every,
                  "re-measure the baseline after this many new candidates to catch drift; 0: never")
      ->capture_default_str();
  sub->add_option("--backoff", f->backoff_s,
                  "first wait (seconds, doubling) for a drifted device to settle")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--backoff-max-rounds", f->backoff_max_rounds,
                  "back-off rounds per problem before it is reported unstable")
      ->capture_default_str();
  sub->add_option("--backoff-max-wait", f->backoff_max_wait_s,
                  "seconds of back-off per problem before it is reported unstable")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--time-limit", f->time_limit_s,
                  "seconds for the whole search, shared by its problems; it stops at a candidate "
                  "boundary; a candidate answered from the database is charged what it cost when "
                  "measured (default: none)")
      ->check(finite_number());
  sub->add_option("--timeout", f->timeout_s,
                  "seconds before a candidate's worker is killed (default: the backend's)")
      ->check(finite_number());
}

Result<std::map<std::string, std::string>> parse_pins(const std::vector<std::string>& pins) {
  std::map<std::string, std::string> out;
  for (const auto& pin : pins) {
    auto eq = pin.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pin.size())
      return Error::invalid_argument("--pin '" + pin + "' must be knob=value");
    auto [at, fresh] = out.emplace(pin.substr(0, eq), pin.substr(eq + 1));
    if (!fresh && at->second != pin.substr(eq + 1))
      return Error::invalid_argument(fmt::format("--pin pins {} twice ({} and {})", at->first,
                                                 at->second, pin.substr(eq + 1)));
  }
  return out;
}

Result<TuneOptions> search_options(const SearchFlags& f, const GlobalOptions& g) {
  auto bad = [](std::string what) { return Error::invalid_argument(std::move(what)); };
  if (f.patience < 0)
    return bad(fmt::format("--patience {} is negative; use 0 to disable it or a positive count",
                           f.patience));
  if (f.max_candidates < 0) return bad("--max-candidates must be >= 0 (0: no limit)");
  if (f.timeout_s < 0) return bad("--timeout must be positive (seconds)");
  if (f.deploy_band < 0) return bad("--deploy-band must be >= 0 (a fraction: 0.5 is 50%)");
  if (f.anchor_every < 0) return bad("--anchor-every must be >= 0 (0 turns the drift check off)");
  if (f.retime_best < 0) return bad("--retime-best must be >= 0 (0 turns re-timing off)");
  if (f.backoff_s < 0) return bad("--backoff must be >= 0 seconds");
  if (f.backoff_max_rounds < 0) return bad("--backoff-max-rounds must be >= 0");
  if (f.backoff_max_wait_s < 0) return bad("--backoff-max-wait must be >= 0 seconds");
  if (f.time_limit_s < 0) return bad("--time-limit must be > 0 seconds");
  TuneOptions o;
  o.strategy = f.strategy;
  o.seed = f.seed;
  o.patience = f.patience;
  if (f.max_candidates > 0) o.max_candidates = f.max_candidates;
  o.arguments = nlohmann::json(g.argv).dump();
  o.deploy_band = f.deploy_band;
  o.retime_best = f.retime_best;
  o.drift.anchor_every = f.anchor_every;
  o.drift.backoff_s = f.backoff_s;
  o.drift.max_rounds = f.backoff_max_rounds;
  o.drift.max_wait_s = f.backoff_max_wait_s;
  if (f.time_limit_s > 0) o.time_limit_s = f.time_limit_s;
  ATTUNE_ASSIGN(o.pins, parse_pins(f.pins));
  for (const auto& setting : f.strategy_options) {
    auto eq = setting.find('=');
    if (eq == std::string::npos || eq == 0)
      return bad("--strategy-option '" + setting +
                 "' must be NAME=VALUE (attune tune --strategy-option help lists them)");
    o.strategy_options[setting.substr(0, eq)] = setting.substr(eq + 1);
  }
  ATTUNE_TRY(check_strategy_settings(o.strategy, o.strategy_options));
  return o;
}

std::unique_ptr<CandidateRunner> make_runner(Backend& backend, const SearchFlags& f) {
  const double timeout = f.timeout_s > 0 ? f.timeout_s : backend.default_timeout_s();
  if (!backend.isolated()) return std::make_unique<InProcessRunner>(backend);
  // The worker runs its candidates on the device the scheduler fingerprinted.
  std::vector<std::string> argv{self_executable(), kCandidateWorker,
                                "--backend",       backend.name(),
                                "--device",        std::to_string(backend.device_index())};
  return std::make_unique<WorkerRunner>(argv, timeout);
}

}  // namespace attune::cli
