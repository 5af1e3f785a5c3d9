// Tuning a model's decoder layers in two levels, through the one Tuner. The outer search walks
// every grouping of the layer's ops into kernels (the structural forks: few, so all of them) and
// scores each by 1 / the sum of its kernels' best times; the inner search tunes one distinct
// kernel at a time with the whole budget of TuneOptions. Kernels are deduplicated by structural
// key across layers and groupings, so a kernel shared by 28 layers or by two groupings is tuned
// once and counted each time it runs. Every invocation runs every inner search: what the store
// holds answers it with no GPU work, so an identical rerun launches nothing.
//
// The inner searches fan out one kernel at a time over devices: each device has a thread of its
// own that makes its backend, candidate runner and store connection there (a worker process
// dies with the thread that started it) and takes the next kernel not yet taken. A kernel's
// search depends only on the kernel and the store, so results are the same for any number of
// devices. A device whose tuning fails hands its kernel back to the others and stops.
// tune_layers() is called from one thread; its observer is called under a lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/runner.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "store/store.h"
#include "tune/tuner.h"

namespace attune {

// What `attune tune --model` asks for.
struct LayerRequest {
  graph::ModelConfig model;
  std::string model_path;            // as given, for the report
  std::vector<std::int64_t> layers;  // --layer N: {N}; --layer all: every layer
  graph::LayerShape shape;
};

// What one device's thread tunes with, made in that thread.
struct DeviceLane {
  std::unique_ptr<Backend> backend;  // selected on the device
  std::unique_ptr<CandidateRunner> runner;
  std::unique_ptr<Store> store;  // a connection of its own to the run's database
};
using LaneFactory = std::function<Result<DeviceLane>(int device)>;

// One distinct kernel: a problem as the backend resolved it, in a form, and what the inner
// search of its problem found for that form.
struct KernelResult {
  std::string key;       // structural key: hash of the resolved problem's text and the form
  graph::Kernel kernel;  // its first occurrence (nodes of the first layer and grouping using it)
  Problem problem;       // resolved by the backend
  // The fastest passing config of the form in the deploy regime; nullopt: none passed.
  std::optional<CandidateResult> best;
  std::string failure;  // why there is no best
  int device = -1;      // the device whose thread ran its problem's inner search
  // Its problem's inner search (shared by the problem's forms).
  std::int64_t evaluated = 0, measured = 0, replayed = 0;
  std::vector<ProblemReport::Retimed> retimed;  // its problem's configs timed again after it
  std::string stopped_by;
};

struct GroupingResult {
  graph::Grouping grouping;
  std::string unavailable;  // why it does not lower; "": it does
  // Its kernels over the tuned layers: index into LayerTuneReport::kernels and how many times
  // the layers run it, in first-use order.
  std::vector<std::pair<std::size_t, std::int64_t>> kernels;
  // Its kernels of the one layer the assembled check runs (AssembledCheck::layer), in execution
  // order: index into LayerTuneReport::kernels and the kernel's role (its first graph node).
  std::vector<std::pair<std::size_t, std::string>> one_layer;
  // Sum of count x best deploy time of its kernels; nullopt when unavailable or a kernel has no
  // passing config.
  std::optional<double> total_us;
  std::string unscored;  // why total_us is unset, when it lowers
  std::int64_t launches() const;
};

// The check of cutting kernels apart: one layer of the winning grouping run whole (a problem of
// op "layer", core/layer_problem.h: on CUDA its kernels chained as one CUDA graph, in the
// deploy regime), beside the sum of the same kernels' isolated deploy times. Measured through
// the Tuner, so it is stored and an identical re-run answers it from the store; never estimated.
struct AssembledCheck {
  bool measured = false;
  std::int64_t layer = -1;                // the layer run: a later one when tuned (their shape)
  std::int64_t kernels = 0;               // its kernels
  std::optional<double> isolated_sum_us;  // the sum of their isolated deploy times
  std::optional<double> assembled_us;
  std::optional<double> gap;  // assembled / isolated - 1
  // Where the gap is: per kernel, in execution order, its role, its isolated deploy time and
  // its time behind its predecessor in the assembled graph (in_graph_us: from the chain's
  // prefixes timed as graphs, Measurement::parts_us), and graph_floor_us, what launching a graph
  // of one empty kernel costs. Measured when the check ran now; a check answered from the store
  // has neither (the store keeps the total only).
  struct Kernel {
    std::string role;
    std::string problem;
    double isolated_us = 0;
    std::optional<double> in_graph_us;
  };
  std::vector<Kernel> per_kernel;
  std::optional<double> graph_floor_us;
  bool replayed = false;  // answered from the store
  std::string note;       // why it was not measured, or what ran
};

struct LayerTuneReport {
  LayerRequest request;
  DeviceFingerprint device;
  std::string strategy;
  std::uint64_t seed = 0;
  std::vector<int> devices;           // the device indexes the inner searches ran on
  std::vector<KernelResult> kernels;  // distinct, in first-use order
  std::vector<GroupingResult> groupings;
  std::optional<std::size_t> winner;  // the scored grouping with the least total
  std::int64_t kernel_count = 0;      // kernel instances over all groupings and layers
  std::int64_t problems_tuned = 0;    // distinct problems searched (forms share one)
  AssembledCheck assembled;
  bool interrupted = false;
  double elapsed_s = 0;        // the inner searches' wall time, from the start of tune_layers
  double check_s = 0;          // the assembled check's wall time, after the searches
  double check_reserve_s = 0;  // what --time-limit kept back from the searches for the check
};

// The groupings of the request's layers, lowered with `ops` and resolved by `backend`; invalid
// input (a layer out of range, a problem the backend refuses) is invalid_argument before anything
// is tuned. No grouping that lowers (the ops or the backend lack what each needs) is unsupported,
// naming why each does not.
Result<LayerTuneReport> plan_layers(const LayerRequest& request, Backend& backend,
                                    const graph::OpLookup& ops = find_op);

// Tunes a plan_layers() report's kernels on `devices` (indexes the backend enumerates; one
// thread each, lanes made by `make_lane`), scores its groupings and runs the assembled check on
// the first device. options.time_limit_s bounds the whole tune: the searches get it less
// check_reserve(), each problem its time_share() of what is left when it starts (past the limit,
// enough to measure its baseline).
Status tune_layers(LayerTuneReport& report, const std::vector<int>& devices,
                   const LaneFactory& make_lane, const TuneOptions& options,
                   const TuneObserver& observer = {});

// --time-limit's share for the next problem of a layer tune: what is left (limit - elapsed),
// with `devices` running in parallel, among the problems left (this one included): half of it in
// equal parts, half in proportion to `weight` of `weights_left` (the problems left's weights,
// this one's included), so every kernel gets a search and the costly ones get more of it; at
// most what is left; past the limit a moment, enough for the baseline.
double time_share(double limit_s, double elapsed_s, std::size_t devices, std::size_t problems_left,
                  double weight = 1, double weights_left = 0);

// What a layer tune's --time-limit keeps back from its searches for the assembled check after
// them, so the limit bounds the tune and not only its searches: 5% of the limit, at least 1 s, at
// most 5 s, and never more than a fifth of it. On the H200 an 8 x 512 layer's check and the
// process around the searches took 1.2 s (31.4 s in all at --time-limit 30, the searches 30.2;
// bench/results/layer-h200-2026-12-04h.md). A function of the limit alone, so an identical
// re-run shares out the same time.
double check_reserve(double limit_s);

// A problem's weight in that share: what it is likely to cost before any of it is timed, a
// launch plus its op's least bytes at 3 TB/s or its arithmetic at 600 TFLOP/s, whichever is
// longer (OpSignature::work; an H200's class of device: only the ratios among a layer's kernels
// matter). An op with no estimate weighs a launch.
double estimated_us(const Problem& problem, const graph::OpLookup& ops = find_op);

}  // namespace attune
