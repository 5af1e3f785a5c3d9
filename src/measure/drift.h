// DriftGuard: the anchor protocol of DESIGN.md "Measurement protocol". A fixed anchor config is
// re-read after every few newly measured candidates; when it moved past a bound, the candidates
// measured since the last clean anchor are handed back to be discarded and measured again, after a
// back-off until the device settles. It reads the anchor through a function and waits through a
// Clock, and knows no store or backend: the caller discards and re-measures. One thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/space.h"
#include "platform/clock.h"

namespace attune::measure {

struct DriftPolicy {
  int anchor_every = 8;         // newly measured candidates between anchor checks; 0: never check
  double drift_bound = 0.10;    // a reading further than this from the reference is drift
  double recover_bound = 0.03;  // the back-off ends once the anchor is this close to its reference
  double backoff_s = 1.0;       // first wait; doubles at each round
  int max_backoffs = 6;         // rounds before measuring against the anchor's new level
};

// One anchor reading in microseconds; nullopt when the anchor failed to run.
using ReadAnchor = std::function<std::optional<double>()>;

// A candidate measured since the last clean anchor, with the rows it wrote.
struct Pending {
  Point point;
  std::vector<std::int64_t> rows;
};

// What one anchor check found.
struct AnchorCheck {
  enum class Result { kClean, kUnreadable, kDrifted };
  Result result = Result::kClean;
  double reference_us = 0;    // the level the reading was compared with
  double reading_us = 0;      // kDrifted: the confirmed reading
  std::vector<Pending> redo;  // kDrifted: discard these rows and measure the points again
  double drift() const { return reading_us / reference_us - 1; }
};

// How the back-off after a drift ended.
struct Settling {
  bool recovered = false;                  // the anchor came back within recover_bound
  std::optional<double> new_reference_us;  // not recovered: the level now measured against
};

class DriftGuard {
 public:
  DriftGuard(DriftPolicy policy, ReadAnchor read,
             platform::Clock& clock = platform::system_clock());

  // Takes a newly measured candidate into the pending list; whether an anchor check is due. The
  // first call takes the anchor's reference reading; while the anchor cannot be read, nothing is
  // pending and no check is due.
  bool add(Point point, std::vector<std::int64_t> rows);
  // Candidates wait for a check (the one before a run ends).
  bool pending() const { return !pending_.empty(); }

  // Reads the anchor against its reference and clears the pending list (its candidates are then
  // checked, unchecked when the anchor failed to run, or returned in redo when it drifted).
  AnchorCheck check();
  // After a drifted check (and after its rows were discarded, so that a run stopped during the
  // wait leaves no drifted row to be answered from): waits backoff_s, doubling, up to
  // max_backoffs times, until the anchor is back within recover_bound; if it never is, the last
  // reading (the drifted one when max_backoffs is 0) becomes the reference.
  Settling settle();

 private:
  // The median of three readings (first, when given, is one of them): on the H200 one reading of
  // a ~8 us cuBLASLt anchor ranged over -30%..+78% of the next (clock ramps after compile-bound
  // pauses), so a single reading sent the tuner into minute-long back-offs for nothing.
  std::optional<double> reading(std::optional<double> first = std::nullopt);
  bool within(std::optional<double> t, double bound) const;

  DriftPolicy policy_;
  ReadAnchor read_;
  platform::Clock& clock_;
  std::optional<double> reference_;
  std::optional<double> drifted_;  // the last drifted check's reading, until settle()
  std::vector<Pending> pending_;
};

}  // namespace attune::measure
