// mcts: Monte Carlo tree search over a Space's forks (knob 0 at the root, one level per knob).
// After the baseline, a few points drawn at random by the prior (uniform when cold) seed the
// tree's statistics. Then descent picks the child maximising value + exploration bonus, where value
// is the best time found below the child relative to the best found overall, and the bonus is
// weighted by the prior's score for the child. An untried child is attractive by its prior alone
// (siblings are not forced to be tried once). Below the chosen untried child, the config is
// completed by a rollout that prefers the incumbent's options and then the prior's. Results are
// backed up along the path, with the mean value below each node, which an untried child inherits in
// part (first- play urgency); fully explored subtrees and dead-end prefixes are closed, so no point
// is proposed twice. A prior whose predictions do not rank the first results is dropped
// (MctsOptions::prior_check). The tree exports to and imports from SearchNode-like rows so a later
// run continues. Deterministic for a seed. One thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "search/options.h"
#include "search/strategy.h"

namespace attune::search {

// Scores (any non-negative scale; normalised per fork) for the legal options of the knob after
// `prefix`. The prior layer provides this; empty means uniform.
using ChildScores = std::function<std::vector<double>(const Point& prefix,
                                                      const std::vector<std::uint32_t>& options)>;

struct MctsOptions {
  double exploration = 0.25;    // weight of the bonus (prior relative to uniform)
  double value_power = 4.0;     // value = (best overall / best below)^power: sharpens near-ties
  double incumbent_bias = 0.7;  // rollout: chance to keep the incumbent's option at each fork
  double incumbent_tail = 0.5;  // rollout: chance to complete with the incumbent's options
  double neighbour_bias = 0.5;  // rollout, otherwise: chance to take an option next to it
  // Points drawn after the baseline and before the first descent, each fork's option by the
  // prior's weight (uniform when cold). Without them the descent stays in the baseline's
  // subtree for its first ~15 evaluations and varies the deepest knobs first: on dedispersion
  // (A4000) all of the first 17 kept the baseline's block_size_x, under which none of the 354
  // configs within 2% of the optimum lie (bench/results/search_replay-2026-11-29b.md; 8 was
  // chosen on seeds 100..119).
  std::size_t initial_samples = 8;
  // An untried child's value (first-play urgency): this fraction of the mean value of the
  // results below its parent, so that where most configs are near the best (a flat landscape)
  // the descent tries new options sooner, and where they are far it keeps to the best child.
  // 0: an untried child is attractive by the bonus alone. 0.25 was chosen on seeds 100..119.
  double first_play = 0.25;
  // Swap points across a structural fork. A knob that decides which other knobs are free (gemm's
  // `kernel`: each kernel's knobs are pinned under the others) makes the incumbent's swap point
  // illegal, so a sibling kernel tried early keeps its stale value while the descent enumerates
  // the incumbent's kernel: on gemm_h200_1x4096x4096 seeds 100..119 spent 100-140 evaluations in
  // a row under skinny_tc (best 1.17x the optimum) while the skinny config nearest the incumbent
  // was 1.04x. With N > 0 such a swap point is completed to the nearest legal config (the
  // incumbent's options where legal, else the baseline's, else the first legal) and tried like a
  // plain swap point when that changes at least N knobs besides the swapped one; 0: never. The
  // mcts_repair strategy uses 2: over seeds 100..159 gemm_h200_1x4096x4096 needed 28 evaluations
  // to within 2% (98 without), no design space needed more; 1 also repaired the one-knob fixes of
  // matmul_kt_h200's constraints, where it needed 18 against 15 (seeds 160..259).
  std::size_t repair_swaps = 0;
  // After this many ok results the tree checks its prior: if the prior's predictions of those
  // results (`predict`) rank them with a Spearman correlation under prior_min_agreement, the
  // prior is dropped and the tree goes on cold; a prior that predicts nothing is kept. 0: never.
  // A prior fitted on the other gemm shapes gives gemm_h200_1x4096x4096's root option skinny,
  // which holds the optimum, 0.025 of its weight, and the tree first tried it at evaluation 149
  // in the median (bench/results/search_replay-2026-12-04d.md); its predictions of the first 20
  // results rank them at 0.06 in the median (seeds 100..119). mcts_repair uses 20, and 0.3 as the
  // prior's own calibration check does (prior.h min_calibration): gemm_h200_1x4096x4096 with the
  // prior needed 28 evaluations to within 2% against 156 (10: 24, 40: 50; seeds 100..119)
  // (bench/results/search_replay-2026-12-04e.md).
  std::size_t prior_check = 0;
  double prior_min_agreement = 0.3;
  // 0: the prior check counts only the baseline and the tree's own proposals, a sample of where
  // the prior leads; 1: also results of points given to the tree (the op's first guesses, a warm
  // start's winners, which the tuner evaluates after the baseline). With 1, gemm's seven cuBLASLt
  // first guesses (ranks differing in lt_algo alone) passed gemm_h200_1x4096x4096's misleading
  // prior through the check and the search took 162 evaluations to within 2% against 37 with 0
  // (seeds 0..19; bench/results/search_replay-2026-12-06b.md).
  std::size_t prior_check_given = 0;
  // A space of at most this many legal configs is searched by the surrogate strategy's cost
  // model (search/surrogate.h) instead of the tree; 0: never. The tree needs many results per
  // fork before its values mean anything, which a space of 19-135 configs cannot give: on the
  // design spaces transpose_h200, matmul_kt_h200 and rmsnorm_h200_16x4096 mcts_repair needed 13,
  // 14 and 14 evaluations to within 2% (seeds 100..119) and the surrogate 4, 4 and 9 (seeds
  // 100..139). The surrogate cannot represent structural forks: on gemm_h200_1x4096x4096 (2472
  // configs) it needed 271 against mcts_repair's 32 (seeds 0..19). mcts_repair uses 256.
  std::size_t small_space = 0;
  // A small space of at most this many configs gets 3 random configs after the baseline before
  // the surrogate's model is first fitted, instead of 1: with 21-25 configs and one random
  // start the model followed that start's neighbourhood. Judged on the fifth held-out set (four
  // attention_prefill spaces of 21-25 configs): 29 evaluations to within 2% over the four against
  // 35 (bench/results/search_replay-2026-12-04.md). mcts_repair uses 32; 0: never.
  std::size_t tiny_space = 0;
  std::size_t tiny_space_samples = 3;  // those random configs (MctsOptions::tiny_space)
  // A tiny space's surrogate proposes a config holding another option of a knob once this many
  // results all hold one option of it (SurrogateOptions::cover_stuck); 0: never. Not used by
  // mcts_repair: on seeds 100..119 / 200..219 / 300..319, 0/2/4 took the tiny tuning spaces
  // attention_prefill_h200_1024_h64 with the prior 8/5/6, 8/19/6, 8/5/6 evaluations to within 2%,
  // attention_prefill_h200_1024_fp16 with the prior 10/12/10, 10/13/10, 10/10/10 and cold
  // 10/9/9, 8/8/8, 10/9/9. With 4, on these spaces (a lone baseline, then 3 draws or 4 proposals
  // led by the prior) a forced proposal comes at evaluation 6 at the earliest: too late for every
  // missed attention_prefill space but 1024_fp16 (Kernel Tuner's best 7) to meet its target, and
  // that one still needed 8-10 (bench/results/search_replay-2026-12-06.md).
  std::size_t tiny_space_cover_stuck = 0;
  // A small space of at most this many configs draws its random configs after the baseline
  // covering options not yet proposed (SurrogateOptions::cover_options); 0: never. Not used by
  // mcts_repair: 32 took the tiny tuning spaces attention_prefill_h200_1024_fp16 and
  // attention_prefill_h200_768_h64_b4 from 10/8/10/11 and 9/8/11/10 to 9/10/6/6 and 6/8/6/8
  // evaluations to within 2% (seeds 100/200/300/400), but on seeds 0..19 three held-out
  // attention_prefill spaces and transpose_h200 needed one or two more, past Kernel Tuner's best
  // for three of them (bench/results/search_replay-2026-12-05.md, candidate 2).
  std::size_t small_space_cover = 0;
  // A small space's surrogate leaves out of its cold fit a config that is the only one holding
  // one of its options once this many other results are fitted (SurrogateOptions::skip_lone);
  // 0: never. silu_mul_h200_2048x14336's baseline is the one naive config, 2.2x the optimum, and
  // its first options of threads and rows_per_block are among the vector kernel's best; fitted,
  // it charges its slowness to them too. mcts_repair uses 5: on seeds 100..119 / 200..219 /
  // 300..319, 0/1/4/5/6/8 took that space 22/7/20/12/21/18, 26/16/24/21/22/19 and
  // 24/10/10/12/14/15 evaluations to within 2%, while 1 took
  // attention_decode_h200_b16_kv512_h64 (whose optimum is next to its baseline) 64/61/71
  // against 7/65/8 (bench/results/search_replay-2026-12-05.md).
  std::size_t small_space_skip_lone = 0;
  // small_space_skip_lone for the cold turns of a small space's search with a prior
  // (SurrogateOptions::skip_lone_prior_led); 0: never. mcts_repair uses 8: with a prior, on seeds
  // 100..119 / 200..219 / 300..319, 0/5/6/8/12/20 took attention_prefill_h200_1024_h64
  // 8/19/8/8/8/8, 8/7/8/8/8/8 and 8/7/8/8/8/8 evaluations to within 2% (5: 7 or 19 by the seed) and
  // attention_decode_h200_b16_kv512_h64 29 against 27 for every other value;
  // attention_prefill_h200_1024_fp16 took 11/10/12 with 5 and 10/10/10 with 0 or 6..20; the other
  // tuning spaces did not move (bench/results/search_replay-2026-12-06.md).
  std::size_t small_space_skip_lone_prior_led = 0;
  // A small space's surrogate fits log time capped at the best so far plus this
  // (SurrogateOptions::log_cap); 0: no cap. mcts_repair uses 0.2: on seeds 100..119, caps of
  // 0.1/0.15/0.2/0.25/0.3 against none took rope_h200_4x1024 10/12/12/13/15 evaluations to within
  // 2% against 36, silu_mul_h200_2048x14336 17/19/22/23/26 against 48, rmsnorm_h200_16x4096
  // 12/9/8/8/8 against 8 (bench/results/search_replay-2026-12-04e.md).
  double small_space_log_cap = 0;
  // With a prior, every this-many-th model proposal of a small space's surrogate ignores the
  // prior (SurrogateOptions::cold_every); 0: never. A prior fitted on the other decode shapes
  // (longer KV) says splits=1 is slow; on attention_decode_h200_b16_kv512_h64 the one config
  // within 2% has splits=1, and the prior-led fit tried splits=1 under the mma kernel first at
  // evaluation 59 in every seed, while the cold fit needs 7 (seeds 100..119). mcts_repair sets 2,
  // in force only with small_space_turn_floor 0 since that replaced it:
  // on seeds 100..119, 2/3/4/5 against 0 took that space 29/43/54/35 against 59,
  // attention_prefill_h200_1024_fp16 10/11/10/9 against 12, attention_prefill_h200_768_h64_b4 8
  // against 8, rmsnorm_h200_16x4096 5/7/5/6 against 8 (bench/results/search_replay-2026-12-04g.md).
  std::size_t small_space_cold_every = 0;
  // A small space's surrogate also fits option pairs at this many times the ridge penalty
  // (SurrogateOptions::pairs), and proposes by a lower confidence bound this many posterior
  // standard deviations under its prediction (SurrogateOptions::explore; explore_prior_led in a
  // search with a prior); 0: neither. mcts_repair uses pairs 1 and explore 0.5 without a prior, 0
  // with one: with the bonus in every search the held-out set 8 met issue 15's targets on 6 of 10
  // cold and 5 of 10 with the prior against the additive model's 6 and 6
  // (search_replay-2026-12-06g.md); with it only in cold searches, over the 62 spaces seen then
  // 58 cold and 56 with the prior against 56 and 55, and on the held-out set 9 7 and 10 against
  // 7 and 10 (search_replay-2026-12-06h.md).
  double small_space_pairs = 0;
  double small_space_explore = 0;
  double small_space_explore_prior_led = 0;  // with a prior (SurrogateOptions::explore_prior_led)
  // With a prior, a small space's model proposals are prior-led or cold by how good each kind's
  // recent proposals were, neither below this share (SurrogateOptions::turn_floor); 0:
  // small_space_cold_every decides. Strict alternation spent every second proposal on a cold fit
  // of results clustered where the prior led, which mostly drew slow configs: on
  // silu_mul_h200_2048x14336 the prior ranks the optimum second, yet 10 of 20 seeds took 28
  // evaluations to within 2% (median 18, Kernel Tuner's best 15), their cold turns drawing true
  // ranks 75, 118, 126 and 151 of 169 (seed 0). mcts_repair uses 0.2 (chosen on the silu_mul and
  // rmsnorm spaces, seeds 0..19): with 0.1/0.2 that space took 3/3 and silu_mul_h100_2048x14336
  // 15/16 against 23; over all 64 spaces with Kernel Tuner rows 59 met issue 15's targets with the
  // prior against 58, none lost (bench/results/search_replay-2026-12-07/).
  double small_space_turn_floor = 0;
  // 1: a space of more than small_space configs is searched by a portfolio of the tree and a
  // genetic algorithm (search/portfolio.h: the tree alone until it goes large_space_stall
  // evaluations without a new best, then each proposal's arm drawn by how well its recent
  // proposals did, neither below large_space_floor), both seeing every result; 0: the tree alone.
  // The tree's one-knob swap points cannot make a move that needs two knobs at once: on the
  // held-out convolution_h100_4096_f17 (2048 configs) the optimum's block_size_x=16 is fast only
  // with use_padding=0 and tile_size_x >= 2, the incumbent held use_padding=1, and 3 of 20 seeds
  // never reached 2% of the optimum (0 of 20 with a prior fitted on the other convolution size,
  // where block_size_x=16 is 1.8x slower). mcts_repair uses 1 with floor 0.05 and stall 12:
  // chosen on the 19 spaces of more than 256 configs seen then (met both targets cold on 19,
  // against the tree's 17; floors 0.1 and 0.2 cost more on pnpoly and the convolutions, a stall of
  // 30 missed both convolution spaces), then judged on the held-out set 11: 4 of 4 cold and with
  // the prior against the tree's 3 and 4 (bench/results/search_replay-2026-12-06i.md).
  std::size_t large_space_portfolio = 0;
  double large_space_floor = 0.2;      // the portfolio's PortfolioOptions::floor
  std::size_t large_space_stall = 12;  // the portfolio's PortfolioOptions::stall
  // 1: the portfolio's third arm, a cost model of the results (PortfolioOptions::model), joins
  // the genetic arm at the stall. mcts_repair uses 1: chosen on the four convolution_h100 spaces
  // (seeds 100..199), then judged on every space of more than 256 configs over seeds 100..149:
  // cold, convolution_h100_1024x4096_f11 65 -> 46 evaluations to within 2% in the median,
  // convolution_milo_A4000 104 -> 50, convolution_h100_4096_f17 54 -> 61
  // (bench/results/search_replay-2026-12-08.md).
  std::size_t large_space_model = 0;
  ChildScores prior;  // empty: a cold (uniform) prior
  // The prior's predicted log latency of full points (StrategyContext::predict): a small space's
  // surrogate ranks its first proposals by it (SurrogateOptions::prior). Empty: none.
  std::function<std::vector<double>(const std::vector<Point>&)> predict;
  // Changes whenever the prior's scores may have changed (a refit), dropping cached scores.
  std::function<std::uint64_t()> prior_generation;
};

// One node of the tree as the Store keeps it (store.h SearchNode): `path` is the canonical text
// of the decided knobs ("" for the root), best_us 0 when no ok result lies below; payload is
// {"failures": n, "closed": bool, "value_sum": x, "value_power": p}, where value_sum is the sum of
// time^-p over the ok results below (read back only under the same value power).
using TreeNode = StateNode;

// The MctsOptions --strategy-option sets (the prior is not one: the tuner gives it from the store).
const OptionList<MctsOptions>& mcts_option_list();

// mcts_repair's options: mcts's, with swap points repaired across structural forks.
struct MctsRepairOptions : MctsOptions {
  MctsRepairOptions() {
    repair_swaps = 2;
    small_space = 256;
    tiny_space = 32;
    small_space_log_cap = 0.2;
    small_space_cold_every = 2;
    small_space_skip_lone = 5;
    small_space_skip_lone_prior_led = 8;
    small_space_pairs = 1;
    small_space_explore = 0.5;
    prior_check = 20;
    large_space_portfolio = 1;
    large_space_floor = 0.05;
    large_space_model = 1;
    small_space_turn_floor = 0.2;
  }
};
const OptionList<MctsRepairOptions>& mcts_repair_option_list();

class Mcts final : public Strategy {
 public:
  // `name`: what it is registered as (its saved state is kept under it).
  Mcts(const Space& space, const StrategyOptions& options, MctsOptions mcts = {},
       std::string name = "mcts");
  ~Mcts() override;

  std::string name() const override { return name_; }
  std::optional<Point> propose() override;
  void observe(const Point& point, Verdict verdict, std::optional<double> time_us) override;
  std::vector<StateNode> save_state() const override;
  Status load_state(const std::vector<StateNode>& nodes) override;

  // The tree's nodes (a portfolio's tree arm's), parents before children, for
  // Store::put_search_nodes.
  std::vector<TreeNode> export_nodes() const;
  // Continues from nodes a previous run exported for the same space. Nodes naming unknown knobs
  // or options (the space changed) are an invalid_argument and nothing is imported.
  Status import_nodes(const std::vector<TreeNode>& nodes);

 private:
  struct State;
  std::unique_ptr<State> s_;         // the tree; null for a small space or a portfolio
  std::unique_ptr<Strategy> small_;  // a small space's surrogate (MctsOptions::small_space)
  std::unique_ptr<Strategy> large_;  // a large space's portfolio (large_space_portfolio)
  std::string name_;
};

}  // namespace attune::search
