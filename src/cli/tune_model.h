// attune tune --model: a model's decoder layers tuned in two levels (tune/layer_tune.h). Thin:
// checks the flags, makes one lane per device, prints the report. One thread.
#pragma once

#include <string>

#include "cli/commands.h"
#include "tune/tuner.h"

namespace attune::cli {

struct ModelFlags {
  std::string model;        // --model: a models/*.json file
  std::string layer = "0";  // --layer: N or all
  std::int64_t batch = 1;
  std::int64_t tokens = 0;  // prefill's prompt tokens per sequence
  bool decode = false;
  std::int64_t kv = 0;  // decode's cache depth
  int gpus = 0;         // --gpus N: the first N devices; 0: not given
  std::string devices;  // --devices LIST: "0,2"; "": not given
};

// Runs the tune; the exit code. `backend`: --backend ("" for the default); `device`: --device
// (-1: not given); `timeout_s`: --timeout (0: the backend's).
int run_tune_model(const GlobalOptions& g, const ModelFlags& f, const TuneOptions& options,
                   const std::string& backend, int device, double timeout_s);

}  // namespace attune::cli
