// The results of one `ortgpu bench` run: what was measured (Configuration),
// its raw samples and derived figures (ConfigResult), and the whole report
// the renderers (report.h) print. Plain value types.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/precisions.h"
#include "bench/statistics.h"
#include "ort/accuracy.h"
#include "ort/memory_profile.h"
#include "ort/io_binding.h"
#include "ort/session_options.h"
#include "status/status.h"

namespace ortgpu::bench {

// How --concurrency N puts N runs in flight.
enum class ConcurrencyMode {
  kSharedSession,  // N threads over one session (ORT's Run is thread-safe)
  kSessionPerWorker,  // N sessions, one thread each (Triton's instance_group count N)
};
std::string_view ConcurrencyModeName(ConcurrencyMode m);  // "shared", "per-worker"
Expected<ConcurrencyMode> ParseConcurrencyMode(std::string_view name);

// One point of the sweep: the settings that differ from the base options.
struct Variant {
  std::string name = "default";  // "io=bound prefer_nhwc=1"; "default" for the base
  bool is_default = true;
  IoMode io = IoMode::kHost;
  OptimizationLevel optimization = OptimizationLevel::kAll;
  std::map<std::string, std::string> cuda_options;  // merged over the base options
  // The model's precision (bench/precisions.h); fp32 on CUDA also sets
  // use_tf32=0 in cuda_options.
  Precision precision = Precision::kTf32;
};

struct Configuration {
  Variant variant;
  Provider provider = Provider::kCpu;
  int64_t batch = 1;
  int concurrency = 1;
  ConcurrencyMode concurrency_mode = ConcurrencyMode::kSharedSession;
};

// What the sessions of a variant held in ONNX Runtime's arenas after a
// configuration ran (bench --memory).
struct ArenaUse {
  int sessions = 0;          // sessions the variant holds (all of them counted below)
  uint64_t weights = 0;      // their own weights: each arena's bytes in use right after its session was created
  uint64_t reserved = 0;     // the arenas' bytes taken from the device (weights included)
  uint64_t in_use = 0;       // the arenas' bytes in use after the runs (weights included)
  uint64_t first_reserved = 0;  // session 0's arena alone (the one every configuration runs on)
  std::string unavailable;   // why the arenas could not be read ("" when they were)
};

struct ConfigResult {
  Configuration config;
  Status error;  // not OK: this configuration could not be measured (why)
  std::string memory;  // where bound tensors lived ("host", "cpu", "cuda:0")
  double session_create_ms = 0;
  double first_run_ms = 0;
  std::vector<double> samples_ms;  // raw, in completion order
  double wall_s = 0;
  LatencyStats stats;
  // Outputs against the CPU provider running the same model (the converted
  // one for fp16 and mixed): did this provider and these settings change
  // the answer.
  Accuracy accuracy;
  // The precision's outputs against true float32: what the precision
  // changed (the same for every result of one precision).
  PrecisionAccuracy precision_accuracy;
  double peak_rss_mb = 0;
  double cpu_utilisation = 0;  // CPU time / wall time during the timed phase, percent of one core
  std::optional<double> gpu_memory_mb;
  std::string gpu_memory_source;  // "process", "device", "n/a: ..."
  // --memory: the arenas of the variant's sessions after this
  // configuration's runs (ort/arena_stats.h); nullopt without --memory.
  std::optional<ArenaUse> arena;
};

// The best configuration for one goal and how it compares with the default.
struct Pick {
  size_t index = 0;      // into BenchReport::results
  double gain = 1.0;     // default p50 / best p50 (latency) or best / default items/s
  bool has_baseline = false;  // false when the default was not measured at that point
  // The pick's own timing windows disagreed (stats.stable false): no stable
  // configuration was usable, and the report and fragment say so.
  bool unstable = false;
  // A faster configuration that was passed over because it was unstable.
  std::optional<size_t> faster_unstable;
  // The best configuration of a reference I/O mode (host, bound, resident,
  // cuda-graph: not what `ortgpu serve` runs) when it measured better than
  // the pick; never picked itself.
  std::optional<size_t> faster_not_served;
  // A faster configuration passed over for its precision: outside the
  // accuracy budget, or a conversion whose accuracy was not judged.
  std::optional<size_t> faster_outside_budget;
  // When the pick's precision is not the default variant's: what it traded,
  // "fp16: 1.43x the tf32 throughput, min cosine 0.99991, ..." (the same
  // settings at the default precision, same batch and concurrency).
  std::string traded;
};

struct Recommendation {
  std::optional<Pick> latency;     // lowest p50 at the smallest batch and concurrency
  std::optional<Pick> throughput;  // highest items/s anywhere
  std::string config_pbtxt;        // Triton fragment for the throughput pick
};

// bench --memory for one variant: the device memory at each batch size it
// ran, the line through the session's arena (ort/memory_profile.h) and what
// it predicts (bench/memory_report.h builds it from the results).
struct MemoryRow {
  int64_t batch = 0;
  int concurrency = 1;
  int sessions = 1;                  // sessions that ran this configuration (per-worker: the concurrency)
  std::optional<uint64_t> measured;  // the process's device memory (NVML); host arena bytes on the CPU
  uint64_t arena_reserved = 0;       // every session's arena, weights included
  uint64_t arena_in_use = 0;
  std::optional<uint64_t> predicted;
  std::optional<double> error;       // (predicted - measured) / measured
};
struct MemoryTable {
  std::string variant;
  // What "measured" is: "process" or "device" (NVML, bench/resources.h), or
  // "host arena" on the CPU provider, where device memory is not measured.
  std::string source;
  bool device = true;  // false: host memory (the CPU provider)
  std::optional<MemoryFit> fit;   // one session's arena by batch (concurrency-1 rows)
  uint64_t weights = 0;           // one session's own weights
  uint64_t other = 0;             // measured - arenas at the largest batch: context, cuDNN/cuBLAS, graph pools
  std::vector<MemoryRow> rows;
  std::vector<std::string> notes;
  // The profile serve would plan with: the fit, other, no shared weights.
  MemoryProfile Profile() const;
};

struct BenchReport {
  std::string model;
  std::string ort_version;
  Provider provider = Provider::kCpu;
  bool dynamic_batch = false;
  std::vector<ConfigResult> results;
  std::optional<Recommendation> recommendation;  // set by --sweep
  std::vector<std::string> notes;                // warnings worth a line each
  // DescribeBudget of the budget precisions were judged by; empty when none
  // was (no --precision asked, or --no-check).
  std::string precision_budget;
  // --memory: one table per variant (bench/memory_report.h).
  std::vector<MemoryTable> memory;

  // True when every configuration was measured and passed its accuracy check.
  bool ok() const;
};

// The smallest batch and the smallest concurrency among a report's results,
// each taken on its own (they may come from different results).
struct BatchAndConcurrency {
  int64_t batch = 0;
  int concurrency = 0;
};
// Over the results for which `include` is true (the caller's notion of a
// usable measurement); nullopt when there is none. Where the charts and the
// latency recommendation stand: the point with the least batching and load.
std::optional<BatchAndConcurrency> SmallestBatchAndConcurrency(
    const BenchReport& report, const std::function<bool(const ConfigResult&)>& include);

// "io=bound batch 32 concurrency 2": how notes and errors name a configuration.
std::string ConfigurationLabel(const Configuration& c);

}  // namespace ortgpu::bench
