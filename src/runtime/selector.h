// Selector: libattune-rt's dispatch decision, CPU only (no CUDA): the open table validated whole
// and indexed, the fingerprint guard, one Slot per distinct shape a process runs, hit and miss
// counters, the ATTUNE_LOG_TUNED engagement log and the ATTUNE_HARVEST shape list.
//
// Thread-safety: select() is safe from any number of threads. A shape seen before costs one
// lock-free hash probe and one relaxed atomic increment (no allocation, no strings, no lock); the
// first call of a shape takes a mutex to decide, log and harvest it once. Slots live as long as
// the Selector.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/config.h"
#include "core/device.h"
#include "core/error.h"
#include "runtime/shape_key.h"
#include "runtime/table_index.h"
#include "table/table.h"

namespace attune::runtime {

struct SelectorOptions {
  bool log_tuned = false;    // one stderr line per distinct shape: hit or miss, row, bucketing
  std::string harvest_path;  // "" = off; else each missed shape is appended once
  // ATTUNE_LOG_TUNED (on when set and not "0"), ATTUNE_HARVEST (a file path).
  static SelectorOptions from_env();
};

// Checks at open that a row's config plans for its problem (the execution layer's planner); a
// failure refuses the table. Empty: no check.
using RowCheck = std::function<Status(const Problem& problem, const Config& config)>;

// One distinct shape this process ran. Everything but the atomics is fixed once published.
struct Slot {
  ShapeKey key;
  std::string problem;  // the call's canonical problem text
  const IndexedRow* matched =
      nullptr;      // the index's answer (nullptr: a miss, or the guard refused)
  std::string why;  // "hit", "hit: m=3 in bucket [1, 16]", "miss: ...", for reports
  std::atomic<const IndexedRow*> row{nullptr};  // the row in effect; nullptr: the baseline runs
  std::atomic<std::uint64_t> calls{0};
  std::atomic<void*> exec{nullptr};  // the execution layer's prepared launch, published once
};

struct Counters {
  std::uint64_t hits = 0;  // calls that ran a table row
  std::uint64_t misses =
      0;  // calls that ran the baseline (no row, the guard, a row refused at first use)
  std::uint64_t shapes = 0;  // distinct shapes
};

// Distinct shapes -> Slot. Lookups are lock-free; inserts happen under the owner's mutex. The
// cell arrays a lookup may still be reading are kept until destruction.
class SlotMap {
 public:
  SlotMap();
  SlotMap(const SlotMap&) = delete;
  SlotMap& operator=(const SlotMap&) = delete;

  Slot* find(const ShapeKey& key) const noexcept {
    const Cells* c = cells_.load(std::memory_order_acquire);
    for (std::size_t i = hash(key) & c->mask;; i = (i + 1) & c->mask) {
      Slot* s = c->at[i].load(std::memory_order_acquire);
      if (!s || s->key == key) return s;
    }
  }
  Slot* insert(std::unique_ptr<Slot> slot);  // the key must be absent
  const std::vector<std::unique_ptr<Slot>>& slots() const { return slots_; }

 private:
  struct Cells {
    std::size_t mask = 0;
    std::unique_ptr<std::atomic<Slot*>[]> at;
  };
  static std::unique_ptr<Cells> make_cells(std::size_t capacity);
  std::atomic<Cells*> cells_;
  std::vector<std::unique_ptr<Cells>> all_cells_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

class Selector {
 public:
  // table_path "" opens no table: every call runs the baseline (and is harvested). A table that
  // fails any check is refused with an error naming the file and the first violation.
  static Result<std::unique_ptr<Selector>> open(const std::string& table_path,
                                                const DeviceFingerprint& here,
                                                const SelectorOptions& options,
                                                const RowCheck& check = {});
  // The same with the table already read by read_table(table_path), or none (libattune-rt
  // reads it before it opens a device, so a bad table is named on a machine without one).
  static Result<std::unique_ptr<Selector>> open(const std::string& table_path,
                                                std::optional<table::Table> table,
                                                const DeviceFingerprint& here,
                                                const SelectorOptions& options,
                                                const RowCheck& check = {});
  // The table at `path`, parsed and validated; a pipe or device is refused unread (inside a
  // user's program it would block or never end).
  static Result<table::Table> read_table(const std::string& path);
  ~Selector();  // with log_tuned: a summary line of the counters
  Selector(const Selector&) = delete;
  Selector& operator=(const Selector&) = delete;

  // The slot of this call's shape, its call counted.
  Slot& select(const ShapeKey& key) {
    if (Slot* s = slots_.find(key)) {
      s->calls.fetch_add(1, std::memory_order_relaxed);
      return *s;
    }
    return first_call(key);
  }

  // The slot's row cannot run here (it does not compile, cuBLASLt refuses it, ...): the baseline
  // runs for this shape from now on, and the calls counted so far are misses. Logged to stderr.
  void demote(Slot& slot, const std::string& why);

  Counters counters() const;
  bool device_mismatch() const { return device_mismatch_; }
  const table::Table* table() const { return table_.get(); }  // nullptr: no table
  const TableIndex& index() const { return index_; }
  const std::string& table_path() const { return table_path_; }

 private:
  Selector() = default;
  Slot& first_call(const ShapeKey& key);
  void harvest(const std::string& problem);

  std::string table_path_;
  std::unique_ptr<const table::Table> table_;
  TableIndex index_;
  bool device_mismatch_ = false;
  SelectorOptions options_;
  std::unordered_set<std::string> harvested_;  // already in the harvest file
  bool harvest_needs_newline_ = false;
  mutable std::mutex mu_;  // first calls, demotion, harvest, counters' walk
  SlotMap slots_;
};

}  // namespace attune::runtime
