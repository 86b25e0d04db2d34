// RunPerf: `ortgpu perf` as a library call. Reads the model's metadata from
// the server, encodes the request once, then for every load step (a
// concurrency or a request rate) starts a LoadClient, measures windows until
// they are stable (measure.h), reads the statistics extension and the
// Prometheus metrics around each window, and stops the client. With a
// latency budget it searches the load instead of sweeping a list (search.h);
// with compare_model it runs bench::RunBenchmark on that file in this
// process, as serve runs the model (perf/served_config.h). Renderers
// (report.h) print the PerfReport.
//
// Blocking; call from one thread. Progress is reported through hooks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/inputs.h"
#include "ort/session_options.h"
#include "perf/arrivals.h"
#include "perf/measure.h"
#include "perf/report.h"
#include "perf/request_builder.h"
#include "perf/shared_memory_regions.h"
#include "status/expected.h"

namespace ortgpu::perf {

// How infer requests travel (-i / --protocol, perf_analyzer's names).
enum class Protocol { kHttp, kGrpc };
Expected<Protocol> ParseProtocol(std::string_view name);

struct PerfOptions {
  // The server's HTTP endpoint: model metadata and config, the statistics
  // extension, and the infer requests unless protocol is kGrpc.
  std::string url = "http://localhost:8000";  // --url
  Protocol protocol = Protocol::kHttp;          // -i / --protocol
  // --grpc-url HOST:PORT of the gRPC endpoint; "" means --url's host, port 8001.
  std::string grpc_url;
  std::string model;                           // --model (required)
  std::string version;                         // --model-version; "" the server's latest
  // --metrics-url; "" means http://HOST:8002/metrics of --url's host.
  std::string metrics_url;
  TensorFormat format = TensorFormat::kBinary;  // --json-tensors: kJson
  bench::InputSpec inputs;                      // --shape, --int-range, --input, --seed
  int64_t rows = 1;                             // --batch: rows per request

  LoadMode mode = LoadMode::kConcurrency;
  std::vector<int> concurrency = {1};       // --concurrency / --concurrency-range
  std::vector<double> rates;                // --request-rate / --request-rate-range
  Distribution distribution = Distribution::kConstant;
  int rate_connections = 64;                // --connections: pool of the rate mode
  int64_t request_count = 0;                // --request-count: that many per step, no windows
  int threads = 1;                          // --threads: I/O threads
  bool busy_poll = false;                   // --busy-poll: the I/O threads never sleep
  std::chrono::milliseconds request_timeout{10000};  // --request-timeout-ms
  MeasureOptions measure;

  // --latency-budget-ms: search instead of sweeping. Starts from the first
  // concurrency (rate) and grows to max_concurrency (max_rate).
  std::optional<double> latency_budget_ms;
  double budget_percentile = 99;            // --percentile overrides it too
  int max_concurrency = 256;                // --max-concurrency
  double max_rate = 100000;                 // --max-request-rate
  // Each step's goodput: the requests within this latency per second
  // (StepResult::goodput); the CLI sets it to --latency-budget-ms.
  std::optional<double> goodput_budget_ms;
  // The --shape, --int-range and --input flags that name none of this
  // model's inputs or dims are left out instead of refused (several models
  // share one command line: perf/multi_model.h).
  bool inputs_of_this_model_only = false;

  // --shared-memory system|cuda: inputs and outputs in regions registered
  // with the server (SharedMemoryRegions); --output-shared-memory-size,
  // --shared-memory-device. mode kNone: tensor bytes travel in the requests.
  SharedMemoryOptions shared_memory;

  // --compare-in-process MODEL.onnx: bench in process as serve runs it
  // (perf/served_config.h); --provider when the served config names no
  // instance kind.
  std::string compare_model;
  Provider compare_provider = Provider::kCpu;
};

struct PerfHooks {
  // One line of progress ("concurrency 4: window 2/10: 812.3 infer/s, p95 1.21 ms").
  std::function<void(const std::string& line)> progress;
  // Before the in-process benchmark starts (it has its own progress).
  std::function<void()> on_compare;
};

// Errors (returned): a bad option, the server cannot be reached, the model
// is unknown, its inputs cannot be generated. Failures during load (HTTP
// errors, timeouts) are recorded in the steps and the run stops at the first
// step where every request failed.
Expected<PerfReport> RunPerf(const PerfOptions& options, const PerfHooks& hooks = {});

}  // namespace ortgpu::perf
