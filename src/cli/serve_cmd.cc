// `ortgpu serve`: flags, then serve::Server (src/serve/server.h) until
// SIGTERM/SIGINT, then a drain. Prints the start-up summary (models, devices,
// the bound addresses) on stdout once every model was tried; logs go to
// stderr. Exit 0 after a drain, 1 when the server cannot start, 2 on bad usage.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "bench/tensor_files.h"
#include "cli/commands.h"
#include "cli/cuda_setup.h"
#include "gpu/cuda_driver.h"
#include "ort/tensor.h"
#include "precision/model_cache.h"
#include "serve/server.h"
#include "sys/host_allocator.h"

namespace ortgpu::cli {
namespace {

struct ServeFlags {
  std::string repository;
  std::string model;
  std::string config;                      // --config FILE.pbtxt (with --model)
  std::vector<std::string> warmup_inputs;  // --warmup-input NAME=FILE.npy
  std::vector<std::string> warmup_shapes;  // --warmup-shape NAME:DIMS
  bool strict_warmup = false;
  std::string model_cache_dir = precision::DefaultModelCacheDir();  // --model-cache-dir
  std::string gpu_memory_plan = "on";                               // --gpu-memory-plan
  std::string gpu_memory_margin = "10%";                            // --gpu-memory-margin
  std::string model_control = "none";
  int64_t poll_interval_ms = 5000;
  std::vector<std::string> load_models;
  bool require_gpu = false;
  bool cpu = false;
  std::string host = "127.0.0.1";
  int http_port = 8000;
  int metrics_port = 8002;
  int grpc_port = 8001;
  int grpc_threads = 0;
  size_t max_body_bytes = 64u << 20;
  int64_t request_timeout_ms = 60'000;
  int64_t busy_poll_us = 0;
  int http_threads = 0;
  int64_t drain_timeout_ms = 30'000;
  std::string access_log = "none";
  std::string log_level = "info";
  int64_t max_connections = 0;
  uint64_t max_output_bytes = uint64_t{1} << 30;
  std::vector<std::string> allow_hosts;
  std::vector<std::string> allow_origins;
  std::string auth_token_file;
};

// After the first SIGTERM/SIGINT the server drains; a second one ends the
// process at once (exit 1), whatever is still in flight.
void ExitOnSecondSignal(serve::Server& s) {
  if (s.WaitForStop() == 0) return;  // RequestStop: the drain finished
  std::fputs("ortgpu serve: second signal: exiting now without finishing the drain\n", stderr);
  std::fflush(stderr);
  std::_Exit(1);
}

void Usage(const std::string& message) { throw CLI::ValidationError(message); }

int RunServeCommand(const ServeFlags& flags) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("ortgpu-serve"));
  spdlog::set_level(spdlog::level::from_str(flags.log_level));
  // Before the first request's bytes: freed request memory is reused, not
  // given back to the kernel and faulted in again (src/sys/host_allocator.h).
  spdlog::info("{}", ConfigureHostAllocator(RealEnvironment()).summary);

  if (flags.repository.empty() == flags.model.empty()) {
    Usage("give exactly one of --model-repository DIR or --model FILE.onnx");
  }
  auto mode = serve::ParseModelControlMode(flags.model_control);
  if (!mode.ok()) Usage(mode.status().message());
  if (!flags.load_models.empty() && *mode != serve::ModelControlMode::kExplicit) {
    Usage("--load-model only applies with --model-control explicit (other modes load every model)");
  }
  auto access_log = serve::ParseAccessLogFormat(flags.access_log);
  if (!access_log.ok()) Usage(access_log.status().message());
  if (!flags.config.empty() && flags.model.empty()) {
    Usage("--config FILE.pbtxt is the config of --model FILE.onnx; a repository model's config is "
          "DIR/<model>/config.pbtxt");
  }

  serve::ServeOptions options;
  options.core.repository = flags.repository;
  options.core.model_file = flags.model;
  options.core.model_control = *mode;
  options.core.poll_interval_ms = flags.poll_interval_ms;
  options.core.startup_models = flags.load_models;
  options.core.model_config_file = flags.config;
  options.core.loader.require_gpu = flags.require_gpu;
  options.core.loader.strict_warmup = flags.strict_warmup;
  options.core.loader.model_cache_dir = flags.model_cache_dir;
  options.core.memory_plan.enabled = flags.gpu_memory_plan == "on";
  auto margin = serve::ParseMarginPercent(flags.gpu_memory_margin);
  if (!margin.ok()) Usage(margin.status().message());
  options.core.memory_plan.margin_percent = *margin;
  // Measured memory profiles live beside the converted models, by content.
  if (!flags.model_cache_dir.empty()) options.core.memory_plan.profile_dir = flags.model_cache_dir + "/memory";
  for (const std::string& spec : flags.warmup_inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      Usage("--warmup-input '" + spec + "' is not NAME=FILE.npy (or .pb); e.g. --warmup-input sr=sr.npy");
    }
    const std::string name = spec.substr(0, eq);
    auto tensor = bench::ReadTensorFile(spec.substr(eq + 1), name);
    if (!tensor.ok()) Usage("--warmup-input " + spec + ": " + tensor.status().message());
    options.core.loader.warmup_inputs[name] = std::move(tensor).value();
  }
  for (const std::string& spec : flags.warmup_shapes) {
    Status st = ParseShapeFlag(spec, options.core.loader.warmup_shapes);
    if (!st.ok()) Usage("--warmup-shape: " + st.message());
  }

  // GPU instances by default; CPU with --cpu or when no GPU can be used, so
  // `ortgpu serve` works out of the box on a CPU-only machine.
  const GpuProbe gpus = flags.cpu ? GpuProbe{} : ProbeGpus();
  std::string kind_line;
  if (!flags.cpu) {
    // Instances are placed over the GPUs the driver shows (CUDA ordinals,
    // after CUDA_VISIBLE_DEVICES; instance_placement.h).
    auto driver = gpu::NewCudaDriver();
    auto visible = serve::ProbeVisibleGpus(*driver, RealEnvironment());
    if (!visible.ok()) {
      std::fprintf(stderr, "ortgpu serve: %s\n", visible.status().message().c_str());
      return 1;
    }
    options.core.loader.visible_gpus = std::move(visible).value();
  }
  if (flags.cpu) {
    options.core.loader.default_instance_kind = serve::InstanceKind::kCpu;
    kind_line = "Default instance kind: CPU (--cpu)";
  } else if (gpus.names.empty()) {
    if (flags.require_gpu) {
      std::fprintf(stderr,
                   "ortgpu serve: --require-gpu, but no GPU can be used: %s. Run 'ortgpu doctor' to see why, or "
                   "drop --require-gpu to serve on the CPU.\n",
                   gpus.why_none.c_str());
      return 1;
    }
    options.core.loader.default_instance_kind = serve::InstanceKind::kCpu;
    kind_line = "Default instance kind: CPU, because no GPU can be used (" + gpus.why_none +
                "). Models that ask for KIND_GPU will be UNAVAILABLE; run 'ortgpu doctor' to see why.";
  } else {
    options.core.loader.default_instance_kind = serve::InstanceKind::kGpu;
    kind_line = "Default instance kind: GPU (" + std::to_string(gpus.names.size()) + " found: " + gpus.names[0] +
                (gpus.names.size() > 1 ? ", ..." : "") + "); --cpu serves on the CPU";
  }

  options.http.host = flags.host;
  options.http.port = static_cast<uint16_t>(flags.http_port);
  options.http.max_body_bytes = flags.max_body_bytes;
  options.http.request_timeout = std::chrono::milliseconds(flags.request_timeout_ms);
  options.http.access_log = *access_log;
  options.http.busy_poll = std::chrono::microseconds(flags.busy_poll_us);
  options.http.threads = flags.http_threads;
  options.core.loader.busy_poll_ns = flags.busy_poll_us * 1000;
  options.metrics_port = flags.metrics_port;
  options.grpc_port = flags.grpc_port;
  options.grpc_poller_threads = flags.grpc_threads;
  options.drain_timeout = std::chrono::milliseconds(flags.drain_timeout_ms);
  options.http.max_connections = flags.max_connections;
  options.core.max_output_bytes = flags.max_output_bytes;
  options.http.access.allowed_hosts = flags.allow_hosts;
  options.http.access.allowed_origins = flags.allow_origins;
  if (!flags.auth_token_file.empty()) {
    auto token = serve::ReadAuthTokenFile(flags.auth_token_file);
    if (!token.ok()) Usage(token.status().message());
    options.http.access.auth_token = *token;
  }

  auto server = serve::Server::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "ortgpu serve: %s\n", server.status().message().c_str());
    return 1;
  }
  serve::Server& s = **server;
  std::printf("%s\n%s", kind_line.c_str(),
              serve::FormatStartupSummary(s.Models(), gpus.names, flags.host, s.http_port(), s.metrics_port(),
                                          s.grpc_port())
                  .c_str());
  std::fflush(stdout);

  const int signal_number = s.WaitForStop();
  spdlog::info("{}: draining (grace period {} ms)", signal_number == SIGINT ? "SIGINT" : "SIGTERM",
               flags.drain_timeout_ms);
  std::thread second_signal([&s] { ExitOnSecondSignal(s); });
  const bool drained = s.Shutdown();
  s.RequestStop();
  second_signal.join();
  spdlog::info("stopped{}", drained ? "" : " (some requests did not finish within --drain-timeout-ms)");
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve ONNX models over HTTP and gRPC with the KServe v2 / Triton protocol (docs/PROTOCOL.md) from a Triton-style "
      "model repository (docs/SERVING.md), with dynamic batching and Prometheus metrics. SIGTERM/SIGINT drain "
      "and exit 0; exit 1 when the server cannot start, 2 on bad usage.");
  auto* repo = cmd->add_option("--model-repository", flags->repository,
                               "Folder of models: DIR/<model>/[config.pbtxt], DIR/<model>/<version>/model.onnx");
  auto* model = cmd->add_option("--model", flags->model, "Serve one ONNX file as model <stem>, version 1");
  repo->excludes(model);
  cmd->add_option("--config", flags->config,
                  "With --model: the model's config.pbtxt (Triton's format, e.g. a model_warmup or what "
                  "`ortgpu bench --config-out` wrote)");
  cmd->add_option("--warmup-input", flags->warmup_inputs,
                  "NAME=FILE.npy (or .pb): warm-up uses this tensor for input NAME, as a request would send it "
                  "(batch dim first when the model batches); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--warmup-shape", flags->warmup_shapes,
                  "NAME:DIMS for generated warm-up inputs, as bench's --shape: input NAME's full shape "
                  "(audio:1x512) or a symbolic dim's size (samples:512); repeatable")
      ->allow_extra_args(false);
  cmd->add_flag("--strict-warmup", flags->strict_warmup,
                "A model without model_warmup none of whose generated warm-up inputs runs stays UNAVAILABLE "
                "(default: READY with a warning, docs/SERVING.md)");
  cmd->add_option("--model-cache-dir", flags->model_cache_dir,
                  "Where models converted for the precision parameter (fp16, mixed) are kept between loads, by "
                  "content and settings (never beside the model); '' converts at every load "
                  "(docs/SERVING.md, Precision)")
      ->default_str("${XDG_CACHE_HOME:-$HOME/.cache}/ortgpu/models");
  cmd->add_option("--gpu-memory-plan", flags->gpu_memory_plan,
                  "on: a GPU load whose predicted memory does not fit the GPU's free memory less the margin is "
                  "refused before it allocates (UNAVAILABLE, saying what would fit), and each load's measured profile "
                  "is kept in --model-cache-dir/memory for the next plan; off: load without a plan (docs/MEMORY.md)")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_val("on");
  cmd->add_option("--gpu-memory-margin", flags->gpu_memory_margin,
                  "PCT: the share of each GPU's memory the plan keeps free (0-90; e.g. 10 or 10%)")
      ->default_val("10%");
  cmd->add_option("--model-control", flags->model_control,
                  "none: load everything once; poll: rescan every --poll-interval-ms and (re)load changes without "
                  "failing requests; explicit: load --load-model models, then the repository endpoints load/unload")
      ->check(CLI::IsMember({"none", "poll", "explicit"}))
      ->default_val("none");
  cmd->add_option("--poll-interval-ms", flags->poll_interval_ms, "Rescan interval with --model-control poll")
      ->check(CLI::Range(int64_t{10}, int64_t{86'400'000}))
      ->default_val(5000);
  cmd->add_option("--load-model", flags->load_models,
                  "With --model-control explicit: a model to load at start ('*' loads all; repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--require-gpu", flags->require_gpu,
                "Refuse KIND_CPU instances and models whose compute falls back to the CPU (they become UNAVAILABLE)");
  cmd->add_flag("--cpu", flags->cpu,
                "Default instance kind CPU (KIND_AUTO and models without instance_group); default GPU when one "
                "can be used");
  cmd->add_option("--host", flags->host, "Address to listen on (HTTP, gRPC and metrics)")->default_val("127.0.0.1");
  cmd->add_option("--http-port", flags->http_port, "HTTP port; 0: any free port (printed at start)")
      ->check(CLI::Range(0, 65535))
      ->default_val(8000);
  cmd->add_option("--grpc-port", flags->grpc_port,
                  "KServe v2 gRPC port (Triton's GRPCInferenceService and grpc.health.v1); 0: any free port; -1: off")
      ->check(CLI::Range(-1, 65535))
      ->default_val(8001);
  cmd->add_option("--metrics-port", flags->metrics_port, "Prometheus /metrics port; 0: any free port; -1: off")
      ->check(CLI::Range(-1, 65535))
      ->default_val(8002);
  cmd->add_option("--max-body-bytes", flags->max_body_bytes, "Larger request bodies get 413 (gRPC: larger messages get RESOURCE_EXHAUSTED)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40))
      ->default_val(size_t{64} << 20);
  cmd->add_option("--request-timeout-ms", flags->request_timeout_ms,
                  "An inference not answered within this gets 504; 0: no limit")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400'000}))
      ->default_val(60'000);
  cmd->add_option("--http-threads", flags->http_threads,
                  "Network threads that read, parse and answer HTTP requests; 0: one per core, at most 8")
      ->check(CLI::Range(0, 256))
      ->default_val(0);
  cmd->add_option("--grpc-threads", flags->grpc_threads,
                  "Threads that read, decode and handle gRPC calls (the only threads that read gRPC sockets); 0: one per core, at most 4")
      ->check(CLI::Range(0, 256))
      ->default_val(0);
  cmd->add_option("--busy-poll-us", flags->busy_poll_us,
                  "Network threads (HTTP and gRPC) and instance workers poll this long for work before they sleep: lower latency "
                  "for a few microseconds of CPU after each request (0: sleep at once)")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000}))
      ->default_val(0);
  cmd->add_option("--drain-timeout-ms", flags->drain_timeout_ms,
                  "On SIGTERM/SIGINT, how long requests in flight may take to finish")
      ->check(CLI::Range(int64_t{0}, int64_t{3'600'000}))
      ->default_val(30'000);
  cmd->add_option("--max-connections", flags->max_connections,
                  "HTTP connections open at once; more are closed at once and counted in "
                  "ortgpu_http_connections_refused_total (0: the file-descriptor limit, ulimit -n, less 64)")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}))
      ->default_val(0);
  cmd->add_option("--max-output-bytes", flags->max_output_bytes,
                  "The most bytes of outputs one inference may return (400 past it; refused before the run when the "
                  "config's output dims are fixed); 0: no limit")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 50))
      ->default_val(uint64_t{1} << 30);
  cmd->add_option("--allow-host", flags->allow_hosts,
                  "A Host name clients use to reach the server (repeatable; '*': any). IP addresses and localhost "
                  "are always accepted; other names get 403, which stops DNS-rebinding pages")
      ->allow_extra_args(false);
  cmd->add_option("--allow-origin", flags->allow_origins,
                  "An Origin (https://app.example.com) whose browser requests are accepted (repeatable; '*': any); "
                  "other cross-origin requests get 403")
      ->allow_extra_args(false);
  cmd->add_option("--auth-token-file", flags->auth_token_file,
                  "File whose first line is a token that the repository endpoints (index, load, unload), /v2/logging, "
                  "the trace settings and shared-memory register/unregister must send as "
                  "'Authorization: Bearer TOKEN' over HTTP (401 otherwise), and their gRPC RPCs as the metadata "
                  "'authorization: Bearer TOKEN' (UNAUTHENTICATED otherwise)");
  cmd->add_option("--access-log", flags->access_log, "One line per request on stderr: none, plain or json")
      ->check(CLI::IsMember({"none", "plain", "json"}))
      ->default_val("none");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->default_val("info");
  cmd->callback([flags, &result]() { result.exit_code = RunServeCommand(*flags); });
}

}  // namespace ortgpu::cli
