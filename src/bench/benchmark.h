// RunBenchmark: `ortgpu bench` as a library call. Loads the model, builds
// the inputs once per batch size, computes the CPU reference outputs, makes
// the model at each precision asked (once each, judged against true fp32:
// bench/prepared_model.h), then for every variant x batch x concurrency
// creates the sessions, binds I/O, measures, checks accuracy and records
// resources. Renderers (report.h)
// turn the BenchReport into text, JSON, CSV and HTML.
//
// Blocking; call from one thread. Progress is reported through hooks.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/inputs.h"
#include "bench/resources.h"
#include "bench/result.h"
#include "bench/runner.h"
#include "ort/session_options.h"
#include "status/expected.h"
#include "sys/clock.h"

namespace ortgpu::bench {

struct BenchOptions {
  std::string model_path;
  // When non-empty, the model's bytes (tests); model_path is then its label.
  std::string model_bytes;
  // The base session: provider, CUDA options, optimisation level, threads,
  // execution mode, --save-optimized path (written by the first session).
  SessionOptions session;
  IoMode io = IoMode::kHost;
  // --request-rows: served variants join each batch from requests of this
  // many rows through serve's BatchRunner (BoundRunnerOptions::request_rows);
  // 0: the batch is staged once.
  int64_t request_rows = 0;
  // Batch sizes to measure; empty: 1 (or the model's fixed batch).
  std::vector<int64_t> batches;
  std::vector<int> concurrency = {1};
  ConcurrencyMode concurrency_mode = ConcurrencyMode::kSharedSession;
  LoadOptions load;
  InputSpec inputs;
  // Compare every configuration's outputs with the CPU provider's.
  bool check_accuracy = true;
  Tolerance tolerance;
  // --precision: the precisions to measure (bench/precisions.h); empty:
  // DefaultPrecision(provider), not judged against fp32. With --sweep they
  // are the sweep's precision axis. Refused on TensorRT, which makes its own
  // precision choices.
  std::vector<Precision> precisions;
  // --budget: what fp16 and mixed (and TF32) may change against fp32
  // before a precision is marked outside it and never recommended.
  PrecisionBudget budget;
  // --sweep: compare the variants of `sweep_axes` (empty: default axes).
  bool sweep = false;
  std::vector<std::string> sweep_axes;
  StatisticsOptions statistics;
  int histogram_bins = 40;
  // --memory: read every session's arena after each configuration and
  // report the memory table with its fit and predictions
  // (BenchReport::memory); batch sizes then run in ascending order, since an
  // arena keeps what the largest batch so far needed.
  bool memory = false;
};

struct BenchHooks {
  const Clock* clock = &RealClock();
  // GPU memory probe factory; null uses NVML for GPU providers.
  std::function<std::unique_ptr<GpuMemoryProbe>()> gpu_memory_probe;
  // "Measuring default b=8 c=1" before each configuration.
  std::function<void(const std::string& label, size_t index, size_t total)> on_config;
  ProgressFn progress;
};

// One BoundRunner bench makes for a variant: the batch and concurrency it
// measures, its worker, the session it runs on (an index into the variant's
// sessions: 0 when shared, the worker's own per worker) and its CUDA graph
// id (used by the graph I/O modes). Every runner of a session gets an id of
// its own, from 1 up: ORT keeps a session's graphs by id for the session's
// life, so a second runner with the same id (the next concurrency, another
// worker) would replay the first one's graph on the first one's buffers,
// and id 0 is ORT's default, which any unannotated run would capture.
struct RunnerPlan {
  int64_t batch = 1;
  int concurrency = 1;
  int worker = 0;
  size_t session = 0;
  int graph_id = 1;
};
// In the order bench makes them: batch by batch, concurrency by
// concurrency, worker by worker.
std::vector<RunnerPlan> PlanRunners(const std::vector<int64_t>& batches, const std::vector<int>& concurrency,
                                    ConcurrencyMode mode);

// Errors (returned, not recorded): the model does not load, an input spec
// does not fit it, an option is invalid, or - without --sweep - a
// configuration or a conversion fails (EP missing, I/O mode not possible). With --sweep a
// failing variant is recorded in its ConfigResult and the rest still run.
Expected<BenchReport> RunBenchmark(const BenchOptions& options, const BenchHooks& hooks = {});

}  // namespace ortgpu::bench
