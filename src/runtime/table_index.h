// TableIndex: a validated Table's rows keyed by integers, built once at open. A query's
// (op, dtype, flags, n, k | hidden) finds its group by hashing; the group's entries are sorted by
// the axis (m | rows) and cover [lo, hi] each (an exact row: lo == hi), so a bucket is one binary
// search. Rows that libattune-rt cannot key or run (an unknown attribute, a bucket over another
// axis, a backend other than cuda) refuse the whole table. Immutable after build: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/shape_key.h"
#include "table/table.h"

namespace attune::runtime {

struct IndexedRow {
  const table::Row* row = nullptr;  // in the indexed Table
  OpKind op{};
  int number = 0;     // 1-based, over the table's op tables in order
  std::string label;  // "gemm bf16 row 3 (gemm:bias=0,...,n=4096 m=[1, 16])"
  ShapeKey key;       // its axis is 0; [lo, hi] is the axis range
  std::int64_t lo = 0, hi = 0;
  bool bucketed = false;
};

class TableIndex {
 public:
  TableIndex() = default;
  // Move-only: rows_ holds what find() returns pointers to.
  TableIndex(TableIndex&&) = default;
  TableIndex& operator=(TableIndex&&) = default;
  TableIndex(const TableIndex&) = delete;
  TableIndex& operator=(const TableIndex&) = delete;
  // `table` must outlive the index and stay where it is.
  static Result<TableIndex> build(const table::Table& table);

  // The row answering `key`, or nullptr (a miss). No allocation, no strings.
  const IndexedRow* find(const ShapeKey& key) const noexcept {
    if (cells_.empty()) return nullptr;
    const std::uint64_t h = group_hash(key);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const std::int32_t g = cells_[i];
      if (g < 0) return nullptr;
      const Group& grp = groups_[static_cast<std::size_t>(g)];
      if (same_group(grp.key, key)) return find_in(grp, key.axis());
    }
  }

  const std::vector<IndexedRow>& rows() const { return rows_; }
  // The op tables of the Table that no entry point dispatches (their rows are never used).
  const std::vector<std::string>& unused_op_tables() const { return unused_; }

 private:
  struct Span {
    std::int64_t lo, hi;
    std::int32_t row;
  };
  struct Group {
    ShapeKey key;            // the axis 0
    std::size_t begin, end;  // into spans_, sorted by lo
  };

  static std::uint64_t group_hash(const ShapeKey& k) noexcept {
    ShapeKey g = k;
    g.sizes[0] = 0;
    return hash(g);
  }
  // Everything but the axis equal (`group` has its axis 0).
  static bool same_group(const ShapeKey& group, const ShapeKey& k) noexcept {
    if (group.op != k.op || group.dtype != k.dtype || group.flags != k.flags) return false;
    for (std::size_t i = 1; i < kKeySizes; ++i)
      if (group.sizes[i] != k.sizes[i]) return false;
    return true;
  }
  const IndexedRow* find_in(const Group& g, std::int64_t m) const noexcept {
    // The last span starting at or below m; it answers m if m is within it.
    std::size_t lo = g.begin, hi = g.end;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (spans_[mid].lo <= m)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == g.begin) return nullptr;
    const Span& s = spans_[lo - 1];
    return m <= s.hi ? &rows_[static_cast<std::size_t>(s.row)] : nullptr;
  }

  std::vector<IndexedRow> rows_;
  std::vector<Span> spans_;
  std::vector<Group> groups_;
  std::vector<std::int32_t> cells_;  // open addressing over groups_, -1 empty
  std::size_t mask_ = 0;
  std::vector<std::string> unused_;
};

}  // namespace attune::runtime
