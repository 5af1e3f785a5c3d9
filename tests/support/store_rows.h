// Rows for store tests (the conformance suite's, a store's own, merge's): a device and a passing
// measurement of a config.
#pragma once

#include <string>

#include "core/measurement.h"
#include "store/store.h"
#include "support/rows.h"

namespace attune {

// Rows for store tests, the suite's and a store's own.
namespace store_rows {

inline DeviceFingerprint device(const std::string& name = "attune simulated GPU") {
  DeviceFingerprint d{"sim", name, "sim_1", 64, 16ull << 30};
  d.driver_version = "sim-1";
  d.extra["uuid"] = "sim-" + name;
  return d;
}

// A passing rank-regime row of `config` at `us` microseconds.
inline MeasurementRow row(const Problem& p, const std::string& config, double us,
                          const DeviceFingerprint& d = device()) {
  MeasurementRow r = testing::measurement_row(d.key(), p, "sim", config);
  Measurement m;
  m.samples = 20;
  m.median_us = us;
  m.min_us = us * 0.99;
  m.max_us = us * 1.02;
  m.noise = 0.003;
  m.sm_clock_mhz = 1980;
  m.throttle = "none";
  r.outcome.measurement = m;
  r.outcome.check = ErrorCheck{"max_rel_err", 1e-7, 1e-5};
  return r;
}

}  // namespace store_rows

}  // namespace attune
