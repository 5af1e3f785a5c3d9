#include "verify/timing_band.h"

#include <algorithm>

namespace attune {

bool within_band(double recorded_us, double measured_us, double band, double floor_us) {
  return measured_us <= recorded_us + std::max(recorded_us * band, floor_us);
}

}  // namespace attune
