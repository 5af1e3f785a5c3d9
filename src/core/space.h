// Space: the knobs of one kernel family on one problem, as an ordered tree of forks. Constraints
// are predicates over the decided prefix; each is checked as soon as its last knob is decided, so
// an illegal path is pruned at its first illegal fork. Enumeration is lazy, deterministic and
// yields the baseline first. An immutable Space is safe to share between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/value.h"

namespace attune {

// Structural knobs change which kernels exist (fusion); in-place knobs change how one kernel
// computes (tiles, vector width, split-K, stages, algorithm id).
enum class KnobKind { kStructural, kInPlace };

struct Knob {
  std::string name;
  std::vector<Value> options;
  std::size_t baseline = 0;  // index into options of the baseline configuration's value
  KnobKind kind = KnobKind::kInPlace;
};

// Option index per knob in Space order. A prefix (fewer entries than knobs) is a partial config.
using Point = std::vector<std::uint32_t>;

class Space;

// What a constraint sees: the knobs decided so far.
class Assignment {
 public:
  Assignment(const Space& space, const Point& prefix) : space_(space), prefix_(prefix) {}
  bool decided(std::string_view knob) const;
  // The knob's value; the knob must be decided (constraints declare the knobs they read).
  const Value& operator[](std::string_view knob) const;
  std::int64_t i(std::string_view knob) const { return (*this)[knob].as_int(); }

 private:
  const Space& space_;
  const Point& prefix_;
};

struct Constraint {
  std::string text;                // shown to users: "block_m * block_n <= 16384"
  std::vector<std::string> knobs;  // the knobs it reads; it runs once all are decided
  std::function<bool(const Assignment&)> allows;
};

class Space {
 public:
  // Checks names (letters, digits, '_', '.', '-'), option texts (no ',' or '='), duplicates,
  // baselines in range, constraints over known knobs, and that the baseline is legal.
  static Result<Space> make(std::vector<Knob> knobs, std::vector<Constraint> constraints = {});

  const std::vector<Knob>& knobs() const { return d_->knobs; }
  const std::vector<Constraint>& constraints() const { return d_->constraints; }
  std::size_t depth() const { return d_->knobs.size(); }
  std::optional<std::size_t> index_of(std::string_view knob) const;

  Point baseline() const;
  // Whether every constraint whose knobs are all inside the prefix holds.
  bool prefix_legal(const Point& prefix) const;
  // The options of knob prefix.size() that keep the prefix legal, in option order. A legal
  // prefix can still be a dead end (no legal completion); enumeration backtracks past those.
  std::vector<std::uint32_t> legal_options(const Point& prefix) const;
  // Number of legal full configs (walks the pruned tree).
  std::uint64_t count() const;
  // Number of full configs without constraints (the product of option counts).
  double cartesian_size() const;

  Config config(const Point& point) const;
  Result<Point> point(const Config& config) const;
  // The point of a config that may leave knobs out, each left out at the baseline's value (a
  // table row written before a knob existed; an op's first guess, naming only what it changes).
  // A knob the space lacks, a value not among its knob's options or a knob named twice is an
  // error, as in point(). Constraints are not checked.
  Result<Point> point_over_baseline(const Config& partial) const;
  // Canonical text -> Config, checked against the knobs and constraints.
  Result<Config> parse(std::string_view text) const;

  // Lazy, deterministic enumeration: the baseline, then every other legal config in
  // lexicographic order of option indices.
  class Enumerator {
   public:
    explicit Enumerator(const Space& space);
    std::optional<Point> next();

   private:
    bool advance();  // moves the DFS to the next legal full point; false when exhausted
    const Space* space_;
    Point baseline_;
    Point cur_;
    std::vector<std::vector<std::uint32_t>> options_;  // legal options per depth on the path
    std::vector<std::size_t> cursor_;
    bool baseline_sent_ = false;
    bool started_ = false;
    bool done_ = false;
  };
  Enumerator enumerate() const { return Enumerator(*this); }

 private:
  struct Data {
    std::vector<Knob> knobs;
    std::vector<Constraint> constraints;
    std::vector<std::vector<std::size_t>> checks_at;  // constraint ids per deciding depth
    std::vector<std::vector<std::size_t>> reads;      // knob indices each constraint reads
  };
  std::shared_ptr<const Data> d_;
  bool holds(std::size_t constraint, const Point& prefix) const;
};

}  // namespace attune
