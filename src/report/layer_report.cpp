#include "report/layer_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/report.h"

namespace attune {

namespace {

using nlohmann::json;

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::string layers_text(const LayerRequest& r) {
  if (r.layers.size() == 1) return fmt::format("layer {}", r.layers.front());
  if (static_cast<std::int64_t>(r.layers.size()) == r.model.num_hidden_layers)
    return fmt::format("all {} layers", r.layers.size());
  return fmt::format("{} layers", r.layers.size());
}

// What the kernel computes, without its dtype and zero flags: "gemm m=4096 n=4096 k=1024".
std::string shape_text(const Problem& p) {
  std::string out = p.op();
  for (const auto& [key, value] : p.attrs()) {
    if (key == "dtype" || key == "landscape" || value == "0") continue;
    out += fmt::format(" {}={}", key, value);
  }
  return out;
}

// How many times the winning grouping (else every grouping) runs each kernel.
std::map<std::size_t, std::int64_t> counts_in(const GroupingResult& g) {
  std::map<std::size_t, std::int64_t> out;
  for (const auto& [k, n] : g.kernels) out[k] += n;
  return out;
}

}  // namespace

json layer_report_json(const LayerTuneReport& r) {
  json j;
  j["report_version"] = 2;
  j["device"] = r.device;
  j["run"] = {{"strategy", r.strategy},
              {"seed", r.seed},
              {"devices", r.devices},
              {"interrupted", r.interrupted},
              {"elapsed_s", r.elapsed_s},
              {"check_s", r.check_s},
              {"check_reserve_s", r.check_reserve_s}};
  const LayerRequest& q = r.request;
  j["model"] = {{"name", q.model.name},
                {"config", q.model_path},
                {"layers", q.layers},
                {"mode", q.shape.decode ? "decode" : "prefill"},
                {"batch", q.shape.batch},
                {"tokens", q.shape.decode ? json(nullptr) : json(q.shape.tokens)},
                {"kv", q.shape.decode ? json(q.shape.kv) : json(nullptr)}};
  std::map<std::size_t, std::int64_t> winner_counts;
  if (r.winner) winner_counts = counts_in(r.groupings[*r.winner]);
  json kernels = json::array();
  for (std::size_t k = 0; k < r.kernels.size(); ++k) {
    const KernelResult& kr = r.kernels[k];
    json e = {{"key", kr.key},
              {"op", kr.problem.op()},
              {"problem", kr.problem.text()},
              {"problem_key", kr.problem.structural_key()},
              {"form", kr.kernel.form.text()},
              {"nodes", kr.kernel.nodes},
              {"device", kr.device},
              {"evaluated", kr.evaluated},
              {"measured", kr.measured},
              {"replayed", kr.replayed},
              {"stopped_by", kr.stopped_by}};
    e["count_in_winner"] = winner_counts.count(k) ? winner_counts[k] : 0;
    e["retimed"] = retimed_json(kr.retimed);
    if (!kr.kernel.note.empty()) e["note"] = kr.kernel.note;
    if (kr.best) {
      e["best"] = {{"config", kr.best->config},
                   {"median_us", optional_number(kr.best->deploy_us)},
                   {"rank_median_us", optional_number(kr.best->rank_us)}};
      e["failure"] = nullptr;
    } else {
      e["best"] = nullptr;
      e["failure"] = kr.failure;
    }
    kernels.push_back(std::move(e));
  }
  j["kernels"] = std::move(kernels);
  json groupings = json::array();
  for (std::size_t g = 0; g < r.groupings.size(); ++g) {
    const GroupingResult& gr = r.groupings[g];
    json e = {{"grouping", gr.grouping}, {"available", gr.unavailable.empty()}};
    e["unavailable"] = gr.unavailable.empty() ? json(nullptr) : json(gr.unavailable);
    e["total_us"] = optional_number(gr.total_us);
    e["unscored"] = gr.unscored.empty() ? json(nullptr) : json(gr.unscored);
    json ks = json::array();
    for (const auto& [k, n] : gr.kernels) ks.push_back({{"key", r.kernels[k].key}, {"count", n}});
    e["kernels"] = std::move(ks);
    e["launches"] = gr.launches();
    groupings.push_back(std::move(e));
  }
  j["groupings"] = std::move(groupings);
  j["winner"] = r.winner ? json(r.groupings[*r.winner].grouping) : json(nullptr);
  j["total_us"] = r.winner ? optional_number(r.groupings[*r.winner].total_us) : json(nullptr);
  j["kernel_count"] = r.kernel_count;
  j["distinct_kernels"] = r.kernels.size();
  j["problems_tuned"] = r.problems_tuned;
  j["assembled"] = {{"measured", r.assembled.measured},
                    {"layer", r.assembled.layer},
                    {"kernels", r.assembled.kernels},
                    {"replayed", r.assembled.replayed},
                    {"isolated_sum_us", optional_number(r.assembled.isolated_sum_us)},
                    {"assembled_us", optional_number(r.assembled.assembled_us)},
                    {"gap", optional_number(r.assembled.gap)},
                    {"note", r.assembled.note}};
  json per_kernel = json::array();
  for (const AssembledCheck::Kernel& k : r.assembled.per_kernel)
    per_kernel.push_back({{"role", k.role},
                          {"problem", k.problem},
                          {"isolated_us", k.isolated_us},
                          {"in_graph_us", optional_number(k.in_graph_us)}});
  j["assembled"]["per_kernel"] = std::move(per_kernel);
  j["assembled"]["graph_floor_us"] = optional_number(r.assembled.graph_floor_us);
  return j;
}

std::string layer_report_text(const LayerTuneReport& r) {
  const LayerRequest& q = r.request;
  std::string out = fmt::format("{} ({}), {}, {} on {} ({} device{})\n", q.model.name, q.model_path,
                                layers_text(q), q.shape.text(), r.device.name, r.devices.size(),
                                r.devices.size() == 1 ? "" : "s");
  const auto lowered = std::count_if(r.groupings.begin(), r.groupings.end(),
                                     [](const GroupingResult& g) { return g.unavailable.empty(); });
  out += fmt::format(
      "{} kernels ({} grouping{} that lower{}, over {} layer{}), {} distinct ({} problems "
      "searched)\n",
      r.kernel_count, lowered, lowered == 1 ? "" : "s", lowered == 1 ? "s" : "", q.layers.size(),
      q.layers.size() == 1 ? "" : "s", r.kernels.size(), r.problems_tuned);
  // Scored groupings first, fastest first; then those not scored, then those unavailable.
  std::vector<std::size_t> order(r.groupings.size());
  std::size_t width = 0;
  for (std::size_t g = 0; g < order.size(); ++g) {
    order[g] = g;
    width = std::max(width, graph::grouping_text(r.groupings[g].grouping).size());
  }
  auto rank = [&](std::size_t g) {
    const GroupingResult& gr = r.groupings[g];
    return std::make_pair(gr.total_us              ? 0
                          : gr.unavailable.empty() ? 1
                                                   : 2,
                          gr.total_us.value_or(0));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
  out += "\ngroupings (total = sum of count x best time):\n";
  for (std::size_t g : order) {
    const GroupingResult& gr = r.groupings[g];
    const std::string name = graph::grouping_text(gr.grouping);
    if (!gr.unavailable.empty())
      out += fmt::format("  {:<{}}  unavailable: {}\n", name, width, gr.unavailable);
    else if (!gr.total_us)
      out += fmt::format("  {:<{}}  not scored: {}\n", name, width, gr.unscored);
    else
      out += fmt::format("  {:<{}}  {:>10.2f} us  {} launches{}\n", name, width, *gr.total_us,
                         gr.launches(), r.winner == g ? "  <- winner" : "");
  }
  if (!r.winner) {
    out += "\nno grouping could be scored\n";
  } else {
    const GroupingResult& w = r.groupings[*r.winner];
    out += fmt::format("\nwinner {}: {:.2f} us\n", graph::grouping_text(w.grouping), *w.total_us);
    std::size_t kernel_width = 6, form_width = 4;
    for (const auto& [k, n] : w.kernels) {
      kernel_width = std::max(kernel_width, shape_text(r.kernels[k].problem).size());
      form_width = std::max(form_width, r.kernels[k].kernel.form.text().size());
    }
    out += fmt::format("  {:<5} {:<{}}  {:<{}}  {:>11}  {}\n", "count", "kernel", kernel_width,
                       "form", form_width, "best", "config");
    for (const auto& [k, n] : w.kernels) {
      const KernelResult& kr = r.kernels[k];
      out += fmt::format("  {:<5} {:<{}}  {:<{}}  {:>8.2f} us  {}\n", n, shape_text(kr.problem),
                         kernel_width, kr.kernel.form.text(), form_width, *kr.best->deploy_us,
                         kr.best->config);
    }
  }
  bool failures = false;
  for (const KernelResult& kr : r.kernels)
    if (!kr.best) {
      if (!failures) out += "\nkernels without a passing config:\n";
      failures = true;
      out +=
          fmt::format("  {} {}: {}\n", shape_text(kr.problem), kr.kernel.form.text(), kr.failure);
    }
  std::int64_t evaluated = 0, measured = 0;
  for (const KernelResult& kr : r.kernels) {
    evaluated += kr.evaluated;
    measured += kr.measured;
  }
  out += fmt::format("\ninner searches: {} candidates evaluated, {} measured now\n", evaluated,
                     measured);
  out += r.assembled.measured
             ? fmt::format(
                   "assembled graph: {:.2f} us against {:.2f} us isolated (gap {:+.1f}%): "
                   "{}\n",
                   *r.assembled.assembled_us, *r.assembled.isolated_sum_us, 100 * *r.assembled.gap,
                   r.assembled.note)
             : fmt::format("assembled graph: {}\n", r.assembled.note);
  const auto& pk = r.assembled.per_kernel;
  if (r.assembled.measured && r.assembled.graph_floor_us &&
      std::all_of(pk.begin(), pk.end(), [](const auto& k) { return k.in_graph_us.has_value(); })) {
    // Where the gap is: each kernel alone against the same kernel behind its predecessor.
    std::size_t role_width = 4;
    for (const auto& k : pk) role_width = std::max(role_width, k.role.size());
    double in_graph = 0;
    out += fmt::format("  {:<{}}  {:>11}  {:>11}  {:>7}  {}\n", "role", role_width, "isolated",
                       "in graph", "change", "problem");
    for (const auto& k : pk) {
      in_graph += *k.in_graph_us;
      out += fmt::format("  {:<{}}  {:>8.2f} us  {:>8.2f} us  {:>+6.1f}%  {}\n", k.role, role_width,
                         k.isolated_us, *k.in_graph_us, 100 * (*k.in_graph_us / k.isolated_us - 1),
                         k.problem);
    }
    out += fmt::format("  {:<{}}  {:>8.2f} us  {:>8.2f} us\n", "sum", role_width,
                       *r.assembled.isolated_sum_us, in_graph);
    out += fmt::format(
        "  (in graph: the chain's first k kernels timed as a CUDA graph behind an empty kernel, "
        "k = 0..{}, each minus the one before; launching a graph at all took {:.2f} us)\n",
        pk.size(), *r.assembled.graph_floor_us);
  } else if (r.assembled.measured) {
    out +=
        r.assembled.replayed
            ? "  (the kernels' times in the graph are not kept by the database; a check measured "
              "anew reports them)\n"
            : "  (the kernels' times in the graph were not measured: the chain could not be "
              "captured as graphs)\n";
  }
  if (r.interrupted) out += "interrupted: the kernels not tuned are listed above\n";
  return out;
}

}  // namespace attune
