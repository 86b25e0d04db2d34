// `ortgpu perf` against several models at once (issue 27, docs/MEMORY.md):
// `--model resnet50:0.5 --model bert:0.3 --model mlp:0.2` (or one list,
// `--model resnet50:0.5,bert:0.3,mlp:0.2`) gives each model a share of the
// load (the shares are weights, normalised; a model without one weighs 1).
// Each model gets its own RunPerf with its share of every load step (a
// concurrency c becomes round(c x share), at least 1 connection; a rate r
// becomes r x share), all started together on their own threads. So that
// the models' steps overlap in time, each step is exactly as many windows
// as the stability check compares (--max-trials is set to them; a step whose
// windows disagree is reported unstable rather than measured longer), and a
// latency budget is the goodput threshold of every step (the requests within
// it per second) rather than a search. Input flags (--shape, --int-range,
// --input) apply to the models that have the input or dim they name.
//
// RunMultiPerf blocks; renderers are pure functions of the report.
#pragma once

#include <string>
#include <vector>

#include "perf/perf.h"

namespace ortgpu::perf {

struct ModelShare {
  std::string model;
  double share = 1;  // after SplitShares: the fraction of the load, summing to 1
};

// "resnet50", "resnet50:2", "bert:0.3" -> the model and its weight.
// InvalidArgument naming the text for an empty name or a weight that is not
// a positive number.
Expected<ModelShare> ParseModelShare(const std::string& text);

// The shares normalised to sum to 1. InvalidArgument for no model or a
// model named twice.
Expected<std::vector<ModelShare>> SplitShares(std::vector<ModelShare> models);

// The options of each model's run: `base` with its model, its share of
// every load step and lock-step windows (see the header comment).
std::vector<PerfOptions> ModelRunOptions(const PerfOptions& base, const std::vector<ModelShare>& models);

struct ModelPerf {
  ModelShare share;
  PerfReport report;
  std::string error;  // the run could not start or stopped (its message); "" when it ran
};

struct MultiPerfReport {
  LoadMode mode = LoadMode::kConcurrency;
  std::optional<double> budget_ms;  // the goodput threshold
  double budget_percentile = 99;
  std::vector<ModelPerf> models;
  // One line per step: what limited it (DescribeSaturation).
  std::vector<std::string> saturation;
  std::vector<std::string> notes;
  // Every model ran and no request failed.
  bool ok() const;
};

// A share of a resource past which it counts as saturated (GPU busy, or
// the host's every core busy).
inline constexpr double kSaturated = 0.9;

// Per step (by index), what limited the models together, from the server's
// gauges (nv_gpu_utilization, nv_cpu_utilization, read by every model's run
// and averaged) and each model's execution time per second (executions/s x
// the compute time of one, from the statistics extension):
//   "step 2: the GPU is saturated (97% busy; host CPU 41%): resnet50 takes 71%
//    of the execution time, bert 27%, mlp 2%"
//   "step 2: the host's CPU is saturated (96% of every core; GPU 35% busy) ..."
//   "step 2: neither the GPU (35% busy) nor the host's CPU (50%) is saturated ..."
// A step with neither gauge says so once. Pure.
std::vector<std::string> DescribeSaturation(const std::vector<ModelPerf>& models);

// Runs every model's load at once. Errors only for bad options; a model
// whose run fails carries its error.
Expected<MultiPerfReport> RunMultiPerf(const PerfOptions& base, const std::vector<ModelShare>& models,
                                       const PerfHooks& hooks = {});

// Per step, one line per model: its share, load, throughput, percentiles,
// goodput within the budget, errors; then each model's own notes.
std::string RenderMultiTable(const MultiPerfReport& report);
// {"mode", "budget_ms", "ok", "models": [{"model", "share", "error", "report": RenderJson's document}],
//  "saturation", "notes"}.
std::string RenderMultiJson(const MultiPerfReport& report, int indent = 2);

}  // namespace ortgpu::perf
