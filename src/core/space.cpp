#include "core/space.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <set>

namespace attune {

namespace {

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == '-';
  });
}

}  // namespace

bool Assignment::decided(std::string_view knob) const {
  auto i = space_.index_of(knob);
  return i && *i < prefix_.size();
}

const Value& Assignment::operator[](std::string_view knob) const {
  auto i = space_.index_of(knob);
  assert(i && *i < prefix_.size() && "constraint reads a knob it did not declare");
  return space_.knobs()[*i].options[prefix_[*i]];
}

Result<Space> Space::make(std::vector<Knob> knobs, std::vector<Constraint> constraints) {
  auto d = std::make_shared<Data>();
  std::set<std::string> names;
  for (const auto& k : knobs) {
    if (!valid_name(k.name))
      return Error::invalid_argument("knob name '" + k.name +
                                     "' must be letters, digits, '_', '.' or '-'");
    if (!names.insert(k.name).second)
      return Error::invalid_argument("knob '" + k.name + "' is declared twice");
    if (k.options.empty()) return Error::invalid_argument("knob '" + k.name + "' has no options");
    if (k.baseline >= k.options.size())
      return Error::invalid_argument("knob '" + k.name + "' has its baseline out of range");
    std::set<std::string> texts;
    for (const auto& v : k.options) {
      std::string t = v.text();
      if (t.empty() || t.find_first_of(",=") != std::string::npos)
        return Error::invalid_argument("knob '" + k.name + "' option '" + t +
                                       "' must be non-empty and free of ',' and '='");
      if (!texts.insert(t).second)
        return Error::invalid_argument("knob '" + k.name + "' lists option '" + t + "' twice");
    }
  }
  d->knobs = std::move(knobs);
  d->checks_at.resize(d->knobs.size());
  for (std::size_t c = 0; c < constraints.size(); ++c) {
    std::vector<std::size_t> reads;
    std::size_t last = 0;
    for (const auto& name : constraints[c].knobs) {
      auto it = std::find_if(d->knobs.begin(), d->knobs.end(),
                             [&](const Knob& k) { return k.name == name; });
      if (it == d->knobs.end())
        return Error::invalid_argument("constraint '" + constraints[c].text +
                                       "' reads unknown knob '" + name + "'");
      std::size_t idx = static_cast<std::size_t>(it - d->knobs.begin());
      reads.push_back(idx);
      last = std::max(last, idx);
    }
    if (!constraints[c].allows)
      return Error::invalid_argument("constraint '" + constraints[c].text + "' has no predicate");
    if (d->knobs.empty()) return Error::invalid_argument("constraint on a space with no knobs");
    d->checks_at[last].push_back(c);
    d->reads.push_back(std::move(reads));
  }
  d->constraints = std::move(constraints);
  Space space;
  space.d_ = std::move(d);
  Point base = space.baseline();
  if (!space.prefix_legal(base)) {
    for (std::size_t c = 0; c < space.d_->constraints.size(); ++c)
      if (!space.holds(c, base))
        return Error::invalid_argument("the baseline config '" + space.config(base).text() +
                                       "' violates constraint '" + space.d_->constraints[c].text +
                                       "'");
  }
  return space;
}

std::optional<std::size_t> Space::index_of(std::string_view knob) const {
  for (std::size_t i = 0; i < d_->knobs.size(); ++i)
    if (d_->knobs[i].name == knob) return i;
  return std::nullopt;
}

Point Space::baseline() const {
  Point p;
  p.reserve(depth());
  for (const auto& k : d_->knobs) p.push_back(static_cast<std::uint32_t>(k.baseline));
  return p;
}

bool Space::holds(std::size_t c, const Point& prefix) const {
  return d_->constraints[c].allows(Assignment(*this, prefix));
}

bool Space::prefix_legal(const Point& prefix) const {
  for (std::size_t depth = 0; depth < prefix.size() && depth < d_->checks_at.size(); ++depth)
    for (std::size_t c : d_->checks_at[depth])
      if (!holds(c, prefix)) return false;
  return true;
}

std::vector<std::uint32_t> Space::legal_options(const Point& prefix) const {
  std::vector<std::uint32_t> out;
  std::size_t depth = prefix.size();
  if (depth >= this->depth()) return out;
  Point p = prefix;
  p.push_back(0);
  const auto& checks = d_->checks_at[depth];
  for (std::uint32_t o = 0; o < d_->knobs[depth].options.size(); ++o) {
    p.back() = o;
    bool ok = true;
    for (std::size_t c : checks)
      if (!holds(c, p)) {
        ok = false;
        break;
      }
    if (ok) out.push_back(o);
  }
  return out;
}

std::uint64_t Space::count() const {
  if (depth() == 0) return 1;
  std::uint64_t n = 0;
  Point p;
  // Iterative DFS over legal prefixes.
  std::vector<std::vector<std::uint32_t>> opts{legal_options(p)};
  std::vector<std::size_t> cur{0};
  while (!opts.empty()) {
    std::size_t d = opts.size() - 1;
    if (cur[d] >= opts[d].size()) {
      opts.pop_back();
      cur.pop_back();
      if (!p.empty()) p.pop_back();
      if (!cur.empty()) ++cur.back();
      continue;
    }
    p.resize(d);
    p.push_back(opts[d][cur[d]]);
    if (p.size() == depth()) {
      ++n;
      p.pop_back();
      ++cur[d];
    } else {
      opts.push_back(legal_options(p));
      cur.push_back(0);
    }
  }
  return n;
}

double Space::cartesian_size() const {
  double n = 1;
  for (const auto& k : d_->knobs) n *= static_cast<double>(k.options.size());
  return n;
}

Config Space::config(const Point& point) const {
  assert(point.size() == depth());
  std::vector<Config::Entry> e;
  e.reserve(depth());
  for (std::size_t i = 0; i < depth(); ++i)
    e.emplace_back(d_->knobs[i].name, d_->knobs[i].options[point[i]]);
  return Config(std::move(e));
}

Result<Point> Space::point(const Config& config) const {
  if (config.entries().size() != depth())
    return Error::invalid_argument("config '" + config.text() + "' sets " +
                                   std::to_string(config.entries().size()) +
                                   " knobs; the space has " + std::to_string(depth()));
  Point p(depth());
  std::vector<bool> seen(depth(), false);
  for (const auto& [name, value] : config.entries()) {
    auto i = index_of(name);
    if (!i) return Error::invalid_argument("config names unknown knob '" + name + "'");
    if (seen[*i]) return Error::invalid_argument("config names knob '" + name + "' twice");
    seen[*i] = true;
    const auto& opts = d_->knobs[*i].options;
    std::string t = value.text();
    auto it = std::find_if(opts.begin(), opts.end(), [&](const Value& v) { return v.text() == t; });
    if (it == opts.end())
      return Error::invalid_argument("knob '" + name + "' has no option '" + t + "'");
    p[*i] = static_cast<std::uint32_t>(it - opts.begin());
  }
  return p;
}

Result<Point> Space::point_over_baseline(const Config& partial) const {
  std::vector<Config::Entry> entries = partial.entries();
  const Point base = baseline();
  for (std::size_t i = 0; i < depth(); ++i) {
    const Knob& knob = d_->knobs[i];
    if (!partial.get(knob.name)) entries.emplace_back(knob.name, knob.options[base[i]]);
  }
  return point(Config(std::move(entries)));
}

Result<Config> Space::parse(std::string_view text) const {
  ATTUNE_ASSIGN(Config raw, Config::parse(text));
  ATTUNE_ASSIGN(Point p, point(raw));
  for (std::size_t c = 0; c < d_->constraints.size(); ++c)
    if (!holds(c, p))
      return Error::invalid_argument("config '" + std::string(text) + "' violates constraint '" +
                                     d_->constraints[c].text + "'");
  return config(p);
}

Space::Enumerator::Enumerator(const Space& space) : space_(&space), baseline_(space.baseline()) {}

bool Space::Enumerator::advance() {
  const std::size_t depth = space_->depth();
  if (!started_) {
    started_ = true;
    if (depth == 0) return false;  // the empty config is the baseline, already sent
    options_.push_back(space_->legal_options(cur_));
    cursor_.push_back(0);
  } else {
    // Step past the current leaf.
    cur_.pop_back();
    ++cursor_.back();
  }
  while (!options_.empty()) {
    std::size_t d = options_.size() - 1;
    if (cursor_[d] >= options_[d].size()) {
      options_.pop_back();
      cursor_.pop_back();
      if (options_.empty()) return false;
      cur_.pop_back();
      ++cursor_.back();
      continue;
    }
    cur_.resize(d);
    cur_.push_back(options_[d][cursor_[d]]);
    if (cur_.size() == depth) return true;
    options_.push_back(space_->legal_options(cur_));
    cursor_.push_back(0);
  }
  return false;
}

std::optional<Point> Space::Enumerator::next() {
  if (done_) return std::nullopt;
  if (!baseline_sent_) {
    baseline_sent_ = true;
    return baseline_;
  }
  while (advance()) {
    if (cur_ != baseline_) return cur_;
  }
  done_ = true;
  return std::nullopt;
}

}  // namespace attune
