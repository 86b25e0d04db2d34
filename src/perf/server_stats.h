// Server-side figures for `ortgpu perf`: Triton's statistics extension
// (GET /v2/models/M/stats) read before and after each measurement window and
// differenced, turned into the per-request split perf_analyzer prints (queue,
// compute input, compute infer, compute output, and the rest of the server's
// request time as overhead); and GPU utilisation and memory from the
// server's Prometheus text (nv_gpu_utilization, nv_gpu_memory_used_bytes).
// Pure functions over text and values; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"

namespace ortgpu::perf {

// A cumulative {count, ns} pair of the statistics extension.
struct DurationStat {
  int64_t count = 0;
  int64_t ns = 0;
};

// One model's cumulative counters (summed over its versions).
struct InferenceCounters {
  DurationStat success, fail, queue, compute_input, compute_infer, compute_output;
  int64_t inference_count = 0;  // rows inferred
  int64_t execution_count = 0;  // model executions (a batch counts once)
};
InferenceCounters operator-(const InferenceCounters& after, const InferenceCounters& before);
InferenceCounters operator+(const InferenceCounters& a, const InferenceCounters& b);

// Parses {"model_stats":[{"name","version","inference_count","execution_count",
// "inference_stats":{"success":{"count","ns"},...}}]} and sums the entries
// of `model` (every version when `version` is "", else that one). Errors:
// not JSON, or no entry for the model.
Expected<InferenceCounters> ParseModelStatistics(std::string_view json_text, const std::string& model,
                                                 const std::string& version);

// Per-request averages over a window (or several), in microseconds, as
// perf_analyzer reports them. overhead_us = request_us minus the four parts
// (at least 0): what the server spent outside the scheduler and the model
// (HTTP parsing, decoding, encoding).
struct ServerSplit {
  int64_t requests = 0;  // successful requests the server counted
  double request_us = 0;
  double queue_us = 0;
  double compute_input_us = 0;
  double compute_infer_us = 0;
  double compute_output_us = 0;
  double overhead_us = 0;
  double average_batch = 0;  // inferences per execution; 0 when none
};
// nullopt when `delta` counts no successful request.
std::optional<ServerSplit> ComputeSplit(const InferenceCounters& delta);

// One sample of Prometheus' text exposition format.
struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
// Parses the text format (comments, labels with escaped quotes, NaN/+Inf);
// lines that do not parse are skipped.
std::vector<MetricSample> ParsePrometheusText(std::string_view text);

// One GPU's figures from a scrape (issue 30: perf's report per GPU).
struct GpuDeviceSample {
  std::string uuid;  // the series' gpu_uuid label ("" when it has none)
  double utilization = 0;
  double memory_used_bytes = 0;
};
// GPU figures from one scrape: mean utilisation over the GPUs (0..1) and
// the memory used on all of them together, and each GPU's own, in the
// order the scrape lists them.
struct GpuSample {
  int gpus = 0;  // 0: the server reports no GPU, only its host's CPU
  double utilization = 0;
  double memory_used_bytes = 0;
  std::vector<GpuDeviceSample> devices;
  // The server host's CPU busy share over every core (nv_cpu_utilization,
  // 0..1), from the same scrape; nullopt when the server does not report it.
  std::optional<double> host_cpu;
};
// Folds `b` (a later window's scrape) into `a`: utilisation (GPU and host
// CPU) averaged, memory at its highest, overall and per GPU (matched by UUID).
void MergeGpuSample(GpuSample& a, const GpuSample& b);
// With two GPUs or more whose utilisation differs by 30 points or more while
// one is past 50%: "GPU-1f2e.. at 95% while GPU-9a8b.. at 31%: ...", else "".
std::string DescribeGpuImbalance(const GpuSample& g);
// nullopt when the scrape has neither an nv_gpu_utilization nor an
// nv_cpu_utilization series.
std::optional<GpuSample> GpuFromMetrics(const std::vector<MetricSample>& samples);

}  // namespace ortgpu::perf
