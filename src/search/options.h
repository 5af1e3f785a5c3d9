// A strategy's --strategy-option list: the fields of its options struct, each with a name, a
// range and one line of help. The list documents them (defaults read from a default-constructed
// struct, so the documented default is the one in force) and sets them from NAME=VALUE text,
// refusing unknown names, malformed numbers and values out of range. Pure; a list is immutable
// once built and may be shared between threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "search/strategy.h"

namespace attune::search {

// The values an option takes: lo..hi, lo itself excluded when lo_open.
struct Range {
  double lo = 0;
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool contains(double v) const { return (lo_open ? v > lo : v >= lo) && v <= hi; }
  std::string text() const;
};
inline Range at_least(double lo) {
  return {lo};
}
inline Range above(double lo) {
  return {lo, std::numeric_limits<double>::infinity(), true};
}
inline Range between(double lo, double hi) {
  return {lo, hi};
}

// The number `text` stands for, as an option of `strategy` named `name` takes it (an integer
// when `integer`), checked against `range` and `limit` (its field type's largest value);
// invalid_argument naming the option and what it takes otherwise.
Result<double> parse_option_value(const std::string& strategy, const std::string& name,
                                  const std::string& text, bool integer, const Range& range,
                                  double limit = std::numeric_limits<double>::infinity());
// The invalid_argument for a setting no option of the strategy is called, listing the known ones.
Error unknown_option(const std::string& strategy, const std::string& name,
                     const std::vector<std::string>& known);
std::string option_default_text(double value, bool integer);

template <typename Options>
class OptionList {
 public:
  // field: an integer or floating-point member of Options.
  template <typename T>
  OptionList& add(std::string name, T Options::*field, Range range, std::string help) {
    static_assert(std::is_arithmetic_v<T>);
    // The field's own type bounds the range too: an int option is not set to 1e12.
    const double limit = std::is_integral_v<T> ? static_cast<double>(std::numeric_limits<T>::max())
                                               : std::numeric_limits<double>::infinity();
    entries_.push_back({std::move(name), std::is_integral_v<T>, range, limit, std::move(help),
                        [field](const Options& o) { return static_cast<double>(o.*field); },
                        [field](Options& o, double v) { o.*field = static_cast<T>(v); }});
    return *this;
  }

  std::vector<StrategyOptionInfo> info() const {
    const Options defaults{};
    std::vector<StrategyOptionInfo> out;
    for (const auto& e : entries_)
      out.push_back({e.name, e.integer ? "integer" : "real", e.range.text(),
                     option_default_text(e.get(defaults), e.integer), e.help});
    return out;
  }

  // Sets the fields named in settings; the others keep their values.
  Status apply(const std::string& strategy, const StrategySettings& settings, Options& out) const {
    for (const auto& [name, text] : settings) {
      auto e = std::find_if(entries_.begin(), entries_.end(),
                            [&](const Entry& x) { return x.name == name; });
      if (e == entries_.end()) {
        std::vector<std::string> known;
        for (const auto& k : entries_) known.push_back(k.name);
        return unknown_option(strategy, name, known);
      }
      ATTUNE_ASSIGN(double v,
                    parse_option_value(strategy, name, text, e->integer, e->range, e->limit));
      e->set(out, v);
    }
    return Status::success();
  }

 private:
  struct Entry {
    std::string name;
    bool integer;
    Range range;
    double limit;
    std::string help;
    std::function<double(const Options&)> get;
    std::function<void(Options&, double)> set;
  };
  std::vector<Entry> entries_;
};

}  // namespace attune::search
