#include "runtime/table_index.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace attune::runtime {

namespace {

std::string label_of(const table::OpTable& t, std::size_t i) {
  const table::Row& r = t.rows[i];
  std::string where = r.problem.text();
  if (r.bucket) where += fmt::format(" {}=[{}, {}]", r.bucket->axis, r.bucket->lo, r.bucket->hi);
  return fmt::format("{} {} row {} ({})", t.op, t.dtype, i + 1, where);
}

// The row's key and axis range, or why libattune-rt cannot dispatch it.
Status key_row(const table::OpTable& t, const OpSignature& op, std::size_t i, IndexedRow& out) {
  const table::Row& r = t.rows[i];
  auto bad = [&](const std::string& why) {
    return Error::invalid_argument(label_of(t, i) + ": " + why);
  };
  if (r.backend != "cuda")
    return bad(fmt::format("backend '{}' is not one libattune-rt runs (cuda)", r.backend));
  // A bucket row's problem leaves its axis to the bucket; a stand-in size keys the rest.
  const std::string& axis = op.sizes.front();
  Problem problem = r.problem;
  if (r.bucket) {
    if (r.bucket->axis != axis)
      return bad(fmt::format("a bucket over '{}': libattune-rt buckets {} over '{}' only",
                             r.bucket->axis, t.op, axis));
    if (r.bucket->lo < 1) return bad("a bucket starting below 1");
    auto attrs = problem.attrs();
    attrs.insert_or_assign(axis, std::string("1"));
    problem = Problem(problem.op(), std::move(attrs));
  }
  auto key = shape_key_of(problem);
  if (!key) return bad(key.error().message());
  out.key = *key;
  out.bucketed = r.bucket.has_value();
  out.lo = r.bucket ? r.bucket->lo : key->axis();
  out.hi = r.bucket ? r.bucket->hi : key->axis();
  out.key.sizes[0] = 0;
  out.row = &r;
  out.op = key->op;
  out.label = label_of(t, i);
  return Status::success();
}

}  // namespace

Result<TableIndex> TableIndex::build(const table::Table& table) {
  TableIndex ix;
  for (const table::OpTable& t : table.ops) {
    const OpSignature* op = op_kind(t.op) ? find_op(t.op) : nullptr;
    if (!op) {
      ix.unused_.push_back(t.op + " " + t.dtype);
      continue;
    }
    if (t.dtype != "bf16" && t.dtype != "fp16")
      return Error::invalid_argument(
          fmt::format("{} {}: libattune-rt runs bf16 and fp16 only", t.op, t.dtype));
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      IndexedRow r;
      ATTUNE_TRY(key_row(t, *op, i, r));
      r.number = static_cast<int>(ix.rows_.size()) + 1;
      ix.rows_.push_back(std::move(r));
    }
  }
  // Group by everything but the axis; within a group, spans sorted by lo may not overlap.
  // (r.key's axis is 0, so the key itself is the group's.)
  using GroupKey = std::tuple<int, int, int, std::array<std::int64_t, kKeySizes>>;
  std::map<GroupKey, std::vector<Span>> grouped;
  for (std::size_t i = 0; i < ix.rows_.size(); ++i) {
    const IndexedRow& r = ix.rows_[i];
    grouped[{static_cast<int>(r.key.op), static_cast<int>(r.key.dtype), r.key.flags, r.key.sizes}]
        .push_back({r.lo, r.hi, static_cast<std::int32_t>(i)});
  }
  for (auto& [key, spans] : grouped) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    for (std::size_t i = 1; i < spans.size(); ++i)
      if (spans[i].lo <= spans[i - 1].hi)
        return Error::invalid_argument(
            fmt::format("{} and {} answer the same shapes",
                        ix.rows_[static_cast<std::size_t>(spans[i - 1].row)].label,
                        ix.rows_[static_cast<std::size_t>(spans[i].row)].label));
    Group g{ShapeKey{static_cast<OpKind>(std::get<0>(key)), static_cast<Dtype>(std::get<1>(key)),
                     static_cast<std::uint8_t>(std::get<2>(key)), std::get<3>(key)},
            ix.spans_.size(), ix.spans_.size() + spans.size()};
    ix.spans_.insert(ix.spans_.end(), spans.begin(), spans.end());
    ix.groups_.push_back(g);
  }
  std::size_t cap = 8;
  while (cap < 2 * ix.groups_.size()) cap *= 2;
  ix.cells_.assign(cap, -1);
  ix.mask_ = cap - 1;
  for (std::size_t g = 0; g < ix.groups_.size(); ++g) {
    const Group& grp = ix.groups_[g];
    std::size_t i = group_hash(grp.key) & ix.mask_;
    while (ix.cells_[i] >= 0) i = (i + 1) & ix.mask_;
    ix.cells_[i] = static_cast<std::int32_t>(g);
  }
  return ix;
}

}  // namespace attune::runtime
