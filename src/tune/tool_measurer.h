// ToolMeasurer: the real Measurer of `ortgpu tune` (issue 28). InProcess runs
// bench's own RunBenchmark on the engine choice at one batch, in the I/O mode
// serve runs (served, or served-graph with CUDA graphs), for a short fixed
// number of iterations: the figure is the p50 of one batch. Served writes the
// candidate's config.pbtxt into a scratch model repository, starts
// `ortgpu serve` on it as a child (free ports), runs perf's latency-budget
// search against it (perf::RunPerf), and stops the server: the figure is the
// goodput within the budget and the p99 it was measured at.
//
// Single-threaded, like the search that drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "model_config.pb.h"
#include "ort/session_options.h"
#include "tune/candidates.h"
#include "tune/search.h"

namespace ortgpu::tune {

struct ToolMeasurerOptions {
  std::string model_path;  // the user's model; never modified (hard-linked or copied into scratch)
  Provider provider = Provider::kCuda;
  // The model's max_batch_size as the config writer writes it (0: no batching).
  int64_t max_batch_size = 0;
  // The user's config a model folder brought (ScratchBase in model_folder.h):
  // each candidate is served on it, as it will be written.
  std::optional<inference::ModelConfig> base;
  // The ortgpu binary whose `serve` is started (the running one: /proc/self/exe).
  std::string ortgpu_binary;
  // A folder tune may write the scratch repository into (removed per candidate).
  std::string scratch_dir;
  // In-process: warm-up and measured runs per engine choice and batch.
  int warmup = 5;
  int64_t iterations = 50;
  // Served: perf's budget search grows concurrency from 1 to this.
  int max_concurrency = 64;
  int64_t window_ms = 1000;  // perf's measurement window
  int max_trials = 5;        // windows per step before "unstable"
  // One line per measurement phase ("serving inst=2 batch=8 ... on port 41234").
  std::function<void(const std::string&)> log;
};

class ToolMeasurer : public Measurer {
 public:
  explicit ToolMeasurer(ToolMeasurerOptions options) : options_(std::move(options)) {}
  Expected<Measurement> InProcess(const EngineChoice& engine, int64_t batch) override;
  Expected<Measurement> Served(const ServedCandidate& candidate, double latency_budget_ms) override;

 private:
  ToolMeasurerOptions options_;
};

// The scratch or output model folder: DIR/config.pbtxt and DIR/1/model.onnx,
// the model hard-linked (copied across file systems). The user's file is
// never modified; an existing DIR/1/model.onnx is replaced.
Status WriteModelFolder(const std::string& dir, const std::string& model_path, const std::string& config_pbtxt);

// The CUDA EP options of `engine` that differ from ORT's defaults (prefer_nhwc,
// cudnn_conv_algo_search; enable_cuda_graph comes with the served-graph mode).
std::map<std::string, std::string> EngineCudaOptions(const EngineChoice& engine);

}  // namespace ortgpu::tune
