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
  int max_backoffs = 6;         // rounds of one back-off before measuring against a new level
  // Bounds per problem (ggml's --cool-max-retry and --cool-max-wait): past either, the problem is
  // unstable and its search ends. A drift event counts as one round even when it waits none.
  int max_rounds = 12;      // back-off rounds, over all of the problem's drift events
  double max_wait_s = 60;   // seconds of back-off, over all of them
  int rebase_readings = 5;  // readings an anchor's new level is the median of
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
  // kUnstable: drifted, and the problem's bound on back-off rounds is spent; discard redo and
  // end the problem's search.
  enum class Result { kClean, kUnreadable, kDrifted, kUnstable };
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
  bool unstable = false;  // the problem's bound on back-off rounds or time ran out first
};

// An anchor whose readings fall in two clusters that it switches between (a kernel with two
// performance levels, not a device that drifted once and came back): its levels, the medians of
// the clusters, low first.
struct AnchorLevels {
  double low_us = 0, high_us = 0;
  int low_readings = 0, high_readings = 0;
};

// Two clusters in the readings (in time order): the largest gap between sorted readings is
// wider than half the drift bound and than three times the spread inside either side, each
// side holds at least two readings, and the time order switches sides at least four times
// (one drift episode and its recovery switch twice). nullopt otherwise.
std::optional<AnchorLevels> anchor_levels(const std::vector<double>& readings, double drift_bound);

class DriftGuard {
 public:
  // stop: when it says so (an interrupt, the caller's deadline), a back-off ends before its next
  // round, neither recovered nor at a new level.
  DriftGuard(DriftPolicy policy, ReadAnchor read, platform::Clock& clock = platform::system_clock(),
             std::function<bool()> stop = {});

  // Takes a newly measured candidate into the pending list; whether an anchor check is due. The
  // first call takes the anchor's reference reading; while the anchor cannot be read, nothing is
  // pending and no check is due.
  bool add(Point point, std::vector<std::int64_t> rows);
  // Candidates wait for a check (the one before a run ends).
  bool pending() const { return !pending_.empty(); }
  std::size_t pending_count() const { return pending_.size(); }

  // Reads the anchor against its reference and clears the pending list (its candidates are then
  // checked, unchecked when the anchor failed to run, or returned in redo when it drifted or the
  // problem became unstable). Once the anchor is known to have two levels (levels()), a reading
  // near either of them is clean.
  AnchorCheck check();
  // After a drifted check (and after its rows were discarded, so that a run stopped during the
  // wait leaves no drifted row to be answered from): waits backoff_s, doubling, up to
  // max_backoffs times, until the anchor is back within recover_bound; if it never is, the median
  // of rebase_readings fresh readings (the drifted one when max_backoffs is 0) becomes the
  // reference. Waits never take the problem past max_rounds or max_wait_s: it is then unstable.
  Settling settle();

  // Every raw anchor reading of the problem, in time order.
  const std::vector<double>& readings() const { return history_; }
  // The anchor's two levels, once its readings show them (anchor_levels()).
  const std::optional<AnchorLevels>& levels() const { return levels_; }
  double waited_s() const { return waited_s_; }
  int rounds() const { return rounds_; }

 private:
  // The median of three readings (first, when given, is one of them): on the H200 one reading of
  // a ~8 us cuBLASLt anchor ranged over -30%..+78% of the next (clock ramps after compile-bound
  // pauses), so a single reading sent the tuner into minute-long back-offs for nothing.
  std::optional<double> reading(std::optional<double> first = std::nullopt);
  // One raw reading, kept in the history.
  std::optional<double> read_once();
  bool within(std::optional<double> t, double bound) const;
  bool near_a_level(double t) const;

  DriftPolicy policy_;
  ReadAnchor read_;
  platform::Clock& clock_;
  std::function<bool()> stop_;
  std::optional<double> reference_;
  std::optional<double> drifted_;  // the last drifted check's reading, until settle()
  std::vector<Pending> pending_;
  std::vector<double> history_;
  std::optional<AnchorLevels> levels_;
  double waited_s_ = 0;
  int rounds_ = 0;
};

}  // namespace attune::measure
