// A measurement row as the tuner writes one, keyed and hashed, for tests that fill a store by hand;
// the caller adds the outcome. Pure function; thread-safe.
#pragma once

#include <string>

#include "core/config.h"
#include "core/problem.h"
#include "store/store.h"

namespace attune::testing {

inline MeasurementRow measurement_row(const std::string& device_key, const Problem& p,
                                      const std::string& backend, const std::string& config,
                                      Regime regime = Regime::kRank) {
  MeasurementRow r;
  r.device_key = device_key;
  r.problem_key = p.structural_key();
  r.backend = backend;
  r.config = config;
  r.config_hash = Config::parse(config)->hash_hex();
  r.regime = regime;
  return r;
}

}  // namespace attune::testing
