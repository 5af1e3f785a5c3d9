#include "cli/tune_model.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/registry.h"
#include "backends/worker/worker.h"
#include "cli/common.h"
#include "graph/model.h"
#include "report/layer_report.h"
#include "tune/layer_tune.h"

namespace attune::cli {

namespace {

Result<std::int64_t> parse_index(const std::string& text, const std::string& flag) {
  std::int64_t v = -1;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 0)
    return Error::invalid_argument(fmt::format("{} '{}' is not an index (0, 1, ...)", flag, text));
  return v;
}

// The device indexes --gpus / --devices / --device name, each checked against what the backend
// enumerates; all must be one kind of device (the store keys results by its fingerprint).
Result<std::vector<int>> devices_of(const ModelFlags& f, Backend& backend, int device) {
  const int given = (f.gpus > 0) + !f.devices.empty() + (device >= 0);
  if (given > 1) return Error::invalid_argument("give one of --gpus, --devices and --device");
  if (f.gpus < 0) return Error::invalid_argument("--gpus must be a positive count of devices");
  ATTUNE_ASSIGN(auto all, backend.devices());
  std::vector<int> out;
  if (f.gpus > 0) {
    if (static_cast<std::size_t>(f.gpus) > all.size())
      return Error::invalid_argument(
          fmt::format("--gpus {}: the {} backend has {} device{} (attune device --list shows them)",
                      f.gpus, backend.name(), all.size(), all.size() == 1 ? "" : "s"));
    for (int i = 0; i < f.gpus; ++i) out.push_back(i);
  } else if (!f.devices.empty()) {
    std::string rest = f.devices;
    for (;;) {
      const auto comma = rest.find(',');
      ATTUNE_ASSIGN(std::int64_t i, parse_index(rest.substr(0, comma), "--devices"));
      if (i >= static_cast<std::int64_t>(all.size()))
        return Error::invalid_argument(
            fmt::format("--devices {}: the {} backend has {} device{} (indexes 0..{})", f.devices,
                        backend.name(), all.size(), all.size() == 1 ? "" : "s", all.size() - 1));
      if (std::find(out.begin(), out.end(), i) != out.end())
        return Error::invalid_argument(
            fmt::format("--devices {} names device {} twice", f.devices, i));
      out.push_back(static_cast<int>(i));
      if (comma == std::string::npos) break;
      rest = rest.substr(comma + 1);
    }
  } else {
    out.push_back(backend.device_index());
  }
  for (int i : out)
    if (all[static_cast<std::size_t>(i)].key() != all[static_cast<std::size_t>(out[0])].key())
      return Error::invalid_argument(fmt::format(
          "devices {} and {} are different kinds ({} / {}); tune each kind in its own run", out[0],
          i, all[static_cast<std::size_t>(out[0])].name, all[static_cast<std::size_t>(i)].name));
  return out;
}

Result<std::vector<std::int64_t>> layers_of(const std::string& layer,
                                            const graph::ModelConfig& model) {
  std::vector<std::int64_t> out;
  if (layer == "all") {
    for (std::int64_t i = 0; i < model.num_hidden_layers; ++i) out.push_back(i);
    return out;
  }
  auto i = parse_index(layer, "--layer");
  if (!i)
    return Error::invalid_argument(fmt::format("--layer '{}' is not a layer: give N (0..{}) or all",
                                               layer, model.num_hidden_layers - 1));
  out.push_back(*i);
  return out;
}

}  // namespace

int run_tune_model(const GlobalOptions& g, const ModelFlags& f, const TuneOptions& options,
                   const std::string& backend_name, int device, double timeout_s) {
  auto model = graph::load_model(f.model);
  if (!model) return bad_input(model.error().message());
  LayerRequest request;
  request.model = *model;
  request.model_path = f.model;
  request.shape = graph::LayerShape{f.decode, f.batch, f.tokens, f.kv};
  if (auto st = request.shape.check(); !st.ok()) return bad_input(st.error().message());
  auto layers = layers_of(f.layer, *model);
  if (!layers) return bad_input(layers.error().message());
  request.layers = *layers;

  std::unique_ptr<Backend> backend = open_backend_or_report(backend_name);
  if (!backend) return kExitBadInput;
  if (backend->name() == "replay")
    return bad_input("--model tunes on a device backend (sim, cuda), not on recorded spaces");
  if (device >= 0 && !select_device_or_report(*backend, device)) return kExitBadInput;
  auto devices = devices_of(f, *backend, device);
  if (!devices) return bad_input(devices.error().message());
  auto report = plan_layers(request, *backend);
  if (!report)
    return report.error().kind() == Error::Kind::kUnsupported ? failed(report.error().message())
                                                              : bad_input(report.error().message());
  // The database is checked (and created) here, before any thread opens its own connection.
  if (!open_store_or_report(g, true)) return kExitBadInput;

  const std::string name = backend->name();
  const bool isolated = backend->isolated();
  const double timeout = timeout_s > 0 ? timeout_s : backend->default_timeout_s();
  LaneFactory make_lane = [&](int index) -> Result<DeviceLane> {
    DeviceLane lane;
    ATTUNE_ASSIGN(lane.backend, make_backend(name));
    ATTUNE_TRY(lane.backend->select_device(index));
    ATTUNE_ASSIGN(lane.store, open_store(g.db, false));
    if (isolated)
      lane.runner = std::make_unique<WorkerRunner>(
          std::vector<std::string>{self_executable(), kCandidateWorker, "--backend", name,
                                   "--device", std::to_string(index)},
          timeout);
    else
      lane.runner = std::make_unique<InProcessRunner>(*lane.backend);
    return lane;
  };
  TuneObserver observer;
  if (g.verbose)
    observer = [](const TuneEvent& e) {
      spdlog::info(
          "[{} {}/{}] {} -> {}{}", e.problem.name(), e.index, e.space_size, e.result.config,
          e.result.verdict == Verdict::kOk
              ? fmt::format("{:.2f} us", e.result.deploy_us.value_or(e.result.rank_us.value_or(0)))
              : std::string(to_string(e.result.verdict)),
          e.result.replayed ? " [from database]" : "");
    };
  TuneOptions o = options;
  o.interrupted = &g_interrupted;
  if (auto st = tune_layers(*report, *devices, make_lane, o, observer); !st.ok())
    return failed(st.error().message());
  if (g.json)
    fmt::print("{}\n", layer_report_json(*report).dump(2));
  else
    fmt::print("{}", layer_report_text(*report));
  std::fflush(stdout);
  if (report->interrupted) {
    spdlog::error("interrupted");
    return kExitInterrupted;
  }
  if (!report->winner) {
    spdlog::error("no grouping of the layer could be scored");
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace attune::cli
