// Server: one whole `ortgpu serve` process in an object, so the CLI stays a
// flags table and tests can start a complete server in-process on port 0.
// It owns, in start order:
//
//   signal watch     SIGTERM/SIGINT through asio::signal_set (the handler
//                    only records the signal; no work runs in it), set up
//                    first so a signal during model loading is not lost
//   Metrics          + SchedulerMetrics, the ServerCore's observer
//   ServerCore       repository, lifecycle, scheduler, dynamic batcher
//   HttpServer       KServe v2 REST on options.http (port 0: any free port)
//   GrpcServer       KServe v2 gRPC on options.grpc_port (unless < 0), with
//                    the HTTP host, body limit and request timeout
//   MetricsServer    GET /metrics (unless metrics_port < 0)
//   GpuMetricsPoller NVML GPU gauges every gpu_poll_interval (absent when
//                    NVML cannot load: a CPU-only machine)
//
// Lifecycle: Start() -> WaitForStop() (a signal or RequestStop()) ->
// Shutdown(): stop accepting, let requests in flight finish within
// drain_timeout, stop the HTTP server, finish queued requests and unload the
// models, stop the gRPC server, the metrics listener and the poller. The destructor calls
// Shutdown().
//
// Thread-safety: RequestStop() from any thread; WaitForStop() and Shutdown()
// from one controlling thread; the accessors from any thread once Start()
// returned.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/nvml.h"
#include "serve/front_end_defaults.h"
#include "serve/grpc/grpc_server.h"
#include "serve/http/http_server.h"
#include "serve/metrics/metrics.h"
#include "serve/runtime_settings.h"
#include "serve/server_core.h"
#include "status/expected.h"
#include "sys/file_system.h"

namespace ortgpu::serve {

class MetricsServer;
class GpuMetricsPoller;

// Every setting of `ortgpu serve`, with its default. The defaults are
// defined here and in the structs this one holds (HttpOptions, ServerOptions,
// GrpcOptions, front_end_defaults.h), nowhere else: the CLI binds its flags
// to these fields, so `ortgpu serve --help` shows them.
struct ServeOptions {
  ServerOptions core;  // repository or model file, model control, loader (instance kind, require_gpu)
  // host (of every listener), port, body limit (also gRPC's message limit),
  // request timeout (also gRPC's), busy poll, access checks and log.
  HttpOptions http;
  // Port of GET /metrics on http.host; 0: any free port; < 0: no metrics listener.
  int metrics_port = kDefaultMetricsPort;
  // Port of the gRPC endpoint on http.host; 0: any free port; < 0: no gRPC.
  int grpc_port = kDefaultGrpcPort;
  // Threads that encode large gRPC infer responses and complete the calls
  // (GrpcOptions::threads).
  int grpc_threads = GrpcOptions{}.threads;
  // Threads that poll for gRPC calls and handle them
  // (GrpcOptions::poller_threads; 0: DefaultGrpcPollers(), one per four cores, 1 to 4).
  int grpc_poller_threads = GrpcOptions{}.poller_threads;
  // How long Shutdown() lets requests in flight finish before closing connections.
  std::chrono::milliseconds drain_timeout{30'000};
  std::chrono::milliseconds gpu_poll_interval{1000};
  // Watch SIGTERM and SIGINT (WaitForStop returns on them). Tests switch it off.
  bool handle_signals = true;
};

struct ServeDeps {
  ServerDeps core;  // session factory, placement, clock; `observer` is set by Server
  // NVML for the GPU gauges (and for the core's memory plan when
  // core.nvml_factory is null); null: gpu::NewNvml().
  std::function<std::unique_ptr<gpu::Nvml>()> nvml_factory;
  // The host's /proc for the nv_cpu_* gauges; null: the real one.
  const FileSystem* host_fs = nullptr;
};

// One model version as the start-up summary shows it.
struct ModelSummary {
  std::string name;
  std::string version;
  ModelState state = ModelState::kLoading;
  std::string reason;       // why UNAVAILABLE
  bool on_gpu = false;      // instances are KIND_GPU
  std::vector<int> gpus;    // device ordinals of the GPU instances, ascending
  std::vector<int> instances_per_gpu;  // instances on gpus[i]; DEVICE shows "GPU 1 x2" when several GPUs
  std::vector<int> failed_gpus;  // GPUs its load tried and left out (LoadedModel::failed_gpus)
  int instances = 0;
  int max_batch_size = 0;
  bool dynamic_batching = false;
  bool padded = false;       // pad_to_preferred_batch_size
  std::string warmup;        // WARMUP column: "4.2 s, 32 sizes", "0.1 s"
  // Printed as "    padding: ..." (LoadedModel::padding: which sizes run
  // unpadded on an idle instance, which are padded, the measured costs).
  std::string padding;
  // Printed under the model's line as "    warning: ..." (CUDA graphs asked
  // for but not honoured).
  std::vector<std::string> warnings;
  // Printed as "    completed from the model: ..." (LoadedModel::completed).
  std::vector<std::string> completed;
  // Printed as "    precision: ..." (PrecisionOutcome::Describe); "" when
  // the config sets no precision.
  std::string precision;
  // Printed as "    memory: ..." (ModelMemory::Describe: the split per
  // device and the line per session); "" when nothing was measured.
  std::string memory;
};

class Server {
 public:
  // Starts everything. Fails (and starts nothing that stays running) when the
  // repository or model file does not exist, or an address cannot be bound.
  // Models that fail to load do not fail Start: they are UNAVAILABLE.
  static Expected<std::unique_ptr<Server>> Start(ServeOptions options, ServeDeps deps = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t http_port() const;
  // The bound metrics port; nullopt when metrics are disabled.
  std::optional<uint16_t> metrics_port() const;
  // The bound gRPC port; nullopt when gRPC is off.
  std::optional<uint16_t> grpc_port() const;
  ServerCore& core() { return *core_; }
  Metrics& metrics() { return *metrics_; }
  // Whether the NVML poller runs (GPU gauges present).
  bool gpu_metrics() const;

  // Every model version of the repository index, with its completed config.
  std::vector<ModelSummary> Models() const;

  // Blocks until SIGTERM/SIGINT (when handled) or RequestStop(). Returns the
  // signal number, or 0 for RequestStop.
  int WaitForStop();
  void RequestStop();

  // Drains and stops everything (see the header comment). Idempotent. True
  // when every request in flight finished within drain_timeout.
  bool Shutdown();

  struct SignalWatch;  // defined in server.cc

 private:
  Server() = default;

  ServeOptions options_;
  std::unique_ptr<SignalWatch> signals_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<SchedulerObserver> observer_;
  std::unique_ptr<ServerCore> core_;
  std::unique_ptr<RuntimeSettings> settings_;  // before the front ends, which point at it
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<GrpcServer> grpc_;
  std::unique_ptr<MetricsServer> metrics_server_;
  std::unique_ptr<GpuMetricsPoller> gpu_poller_;
  bool shut_down_ = false;
  bool drained_ = true;
};

// The start-up summary: one line per model version (state, device,
// instances, max_batch_size, dynamic batching, warm-up time and batch sizes;
// the reason when UNAVAILABLE, warnings when READY),
// then "HTTP: http://HOST:PORT", "metrics: http://HOST:PORT/metrics" (or
// "metrics: off") and "gRPC: HOST:PORT" (or "gRPC: off").
// `gpu_names[i]` names CUDA device i ("NVIDIA H200").
std::string FormatStartupSummary(const std::vector<ModelSummary>& models, const std::vector<std::string>& gpu_names,
                                 const std::string& host, uint16_t http_port, std::optional<uint16_t> metrics_port,
                                 std::optional<uint16_t> grpc_port = std::nullopt);

}  // namespace ortgpu::serve
