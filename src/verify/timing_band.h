// attune verify's timing check: is a row's time through libattune-rt within the band of what the
// tuner recorded for it? Pure; thread-safe.
#pragma once

namespace attune {

// The band a row's measured time may exceed its recorded one by: `band` of the recorded time,
// and never less than `floor_us`. Timed in separate processes, the deploy regime reproduces a
// kernel to about 0.2 us whatever its length (on the H200, three verifies of one table gave
// 1.82-2.08 us for a 2 us RMSNorm), so a relative band alone fails the smallest kernels on
// noise, not on what was dispatched.
bool within_band(double recorded_us, double measured_us, double band, double floor_us);

}  // namespace attune
