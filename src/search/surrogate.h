// surrogate: a model-based search for small spaces. Every legal config is enumerated once; after
// the baseline and a few random draws, each proposal is the unproposed config that a cost model
// fitted to the results so far predicts fastest (ties broken at random). The model is ridge
// regression of log time (optionally capped a little above the best so far) on each knob's option
// (one-hot) and its position in the knob's option list (linear and squared), so it learns "bigger
// tiles help, up to a point" from a handful of results and ranks configs it has never seen. It
// cannot represent a structural fork (knobs that only matter under one option of another), so it is
// meant for spaces of a few hundred configs, where mcts spends much of the space before its tree's
// statistics mean anything (bench/results/search_replay-2026-12-03.md). Failed configs are never
// proposed again and are left out of the fit. Deterministic for a seed. One thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "search/options.h"
#include "search/strategy.h"

namespace attune::search {

struct SurrogateOptions {
  // Random configs after the baseline before the model is first fitted (with only the baseline
  // it predicts every config alike, so 0 behaves much like 1). Over seeds 100..139 on the
  // design spaces transpose_h200, matmul_kt_h200 and rmsnorm_h200_16x4096, 1 needed 4, 4 and 9
  // evaluations to within 2%, 2 needed 6, 4 and 10, 4 needed 7, 6 and 12. Drawn uniformly: a
  // space-filling draw (each the farthest from the configs proposed before) made transpose_h200
  // need 16 instead of 6, as its far corners are slow.
  std::size_t initial_samples = 1;
  // Ridge penalty on the model's weights (log time is centred first): 0.3, 1 and 3 were within
  // one evaluation of each other on those spaces and seeds, except rmsnorm_h200_16x4096 (10, 9
  // and 10).
  double ridge = 1.0;
  // The model fits log time capped at the best time so far times e^log_cap: a config slower than
  // that counts as just that slow. Least squares on raw log time lets one very slow config (often
  // the baseline, which shares an option with every knob's default) decide the fit: on
  // rope_h200_4x1024 the baseline (the unfused kernel, 5x the optimum) made every option it holds
  // look slow, and tokens=1, which all five configs within 2% of the optimum hold, was first
  // tried at evaluation 34 (seed 0). 0: no cap. Not applied with a prior, whose predictions are of
  // uncapped time. mcts_repair uses 0.2 (bench/results/search_replay-2026-12-04e.md).
  double log_cap = 0;
  // Predicted log latency of full points from a prior trained on other problems
  // (StrategyContext::predict); empty, or a result that is not one finite number per config: no
  // prior. With one, the model fits log time less the prediction (ridge-shrunk towards the
  // prior, not towards a flat landscape), so after the baseline the first proposals follow the
  // prior's order instead of `initial_samples` random draws, and results correct it. A tiny
  // space (21-25 configs) leaves random draws no room; the store's other problems of the same op
  // do carry its landscape (bench/results/search_replay-2026-12-04b.md).
  std::function<std::vector<double>(const std::vector<Point>&)> prior;
  // How much of the prior's prediction the model starts from (its offset is this times the
  // prediction); 0 ignores the prior.
  double prior_weight = 1.0;
  // With a prior, every cold_every-th proposal of the model is the cold model's (the fit without
  // the prior, capped by log_cap), so that a region the prior dismisses is still tried when the
  // results point there: the prior-led fit only corrects the prior where it has results, and a
  // prior from other shapes can dismiss the region that holds this shape's optimum. 0: never.
  std::size_t cold_every = 0;
  // The random draws after the baseline each pick, among the unproposed configs, one that holds
  // the most (knob, option) pairs no proposed config holds yet (ties at random), instead of any
  // config: a handful of draws then shows the model every knob's options. false: uniform draws.
  bool cover_options = false;
  // Leave out of the cold fit a config that is the only legal one holding one of its options (a
  // kernel variant whose other knobs are pinned, as a baseline often is): its time says how good
  // that option is, which no other config shares, and nothing of its other options, which the
  // fit would otherwise charge with it. Applied once at least this many other results are
  // fitted (with fewer, the lone config's contrast is most of what the fit has); not to the fit
  // with a prior, whose prediction of the lone config may be right. 0: never.
  std::size_t skip_lone = 0;
  // skip_lone for the cold turns (cold_every) of a search with a prior: lone configs leave their
  // fit once this many other results are fitted; 0: never. With a prior the first proposals follow
  // the prior, not random draws, so the results cluster where the prior points and the lone
  // config is longer their only contrast: on attention_prefill_h200_1024_h64 (a prior from the
  // other prefill spaces that ranks its configs no better than chance) the first 5-6 proposals
  // all hold block_n=64, consumers=1, and cold turns without the lone split baseline then drew
  // among block_n=128 and consumers=2 blind: 7 or 19 evaluations to within 2% by the seed, against
  // 8 on every seed with it fitted (bench/results/search_replay-2026-12-06.md).
  std::size_t skip_lone_prior_led = 0;
  // Once at least this many results (lone configs aside) all hold one option of a knob that
  // unproposed configs hold other options of, the model's next proposal is its fastest among the
  // configs holding another option of such a knob: a search led into one corner by a prior or by
  // its first results learns nothing of a knob it never varies, and the model, which cannot
  // represent that knob's untried options, may enumerate the corner before it leaves it. 0: never.
  std::size_t cover_stuck = 0;
  // The model also holds one feature per pair of options of two knobs that some legal config
  // holds together, with this many times the ridge penalty of the main features, so that an
  // option that is slow beside one option of another knob and fast beside others is not judged
  // by its first result alone; 0: no pairs (an additive model).
  double pairs = 0;
  // Each model proposal is the config with the lowest predicted log time less this many times
  // the model's uncertainty of it (the ridge posterior's standard deviation, in units of the
  // fitted results' spread): a lower confidence bound, so that a config unlike every result so
  // far is tried before one the model has all but measured. 0: the prediction alone. For a search
  // without a prior; explore_prior_led is the same for a search with one (its prior-led and cold
  // turns alike).
  double explore = 0;
  double explore_prior_led = 0;
  // With a prior, the turn of each model proposal (prior-led fit or cold fit) is drawn by how good
  // each turn's recent proposals were, instead of every cold_every-th: the prior-led turn with
  // probability turn_floor + (1 - 2 turn_floor) q_prior / (q_prior + q_cold), where q is the mean
  // quality of a turn's last turn_window results (the share of the earlier results each beat, 0
  // for a failure; 0.5 before any), as the portfolio (search/portfolio.h) moves proposals between
  // its arms. A prior whose picks keep beating the cold fit's leads; one whose picks the cold
  // fit's beat gives way, and neither turn falls below the floor, so a region the prior dismisses
  // is still tried. 0: cold_every decides. The window of 8 (half the portfolio's) was not tuned.
  double turn_floor = 0;
  std::size_t turn_window = 8;
};

class Surrogate final : public Strategy {
 public:
  // Enumerates the whole space: meant for spaces of at most a few thousand configs.
  Surrogate(const Space& space, std::uint64_t seed, SurrogateOptions options = {},
            std::string name = "surrogate");
  ~Surrogate() override;

  std::string name() const override { return name_; }
  std::optional<Point> propose() override;
  void observe(const Point& point, Verdict verdict, std::optional<double> time_us) override;

 private:
  struct State;
  std::unique_ptr<State> s_;
  std::string name_;
};

// The SurrogateOptions --strategy-option sets.
const OptionList<SurrogateOptions>& surrogate_option_list();

// The features the cost model holds per config without option pairs (SurrogateOptions::pairs 0):
// each knob's options one-hot, plus its position and its square.
std::size_t surrogate_width(const Space& space);

// The legal configs of `space` if there are at most `limit` of them (enumerated as far as that
// takes), else nullopt.
std::optional<std::uint64_t> count_up_to(const Space& space, std::uint64_t limit);

}  // namespace attune::search
