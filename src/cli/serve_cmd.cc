// `ortgpu serve`: flags (AddServeFlags, cli/serve_flags.h), then
// serve::Server (src/serve/server.h) until SIGTERM/SIGINT, then a drain.
// Prints the start-up summary (models, devices, the bound addresses) on
// stdout once every model was tried; logs go to stderr. Exit 0 after a
// drain, 1 when the server cannot start, 2 on bad usage.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "bench/tensor_files.h"
#include "cli/commands.h"
#include "cli/cuda_setup.h"
#include "cli/serve_flags.h"
#include "gpu/cuda_driver.h"
#include "ort/tensor.h"
#include "precision/model_cache.h"
#include "serve/gpu_contexts.h"
#include "serve/server.h"
#include "sys/host_allocator.h"

namespace ortgpu::cli {
namespace {

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

  serve::ServeOptions options = flags.options;
  serve::ServerOptions& core = options.core;
  if (core.repository.empty() == core.model_file.empty()) {
    Usage("give exactly one of --model-repository DIR or --model FILE.onnx");
  }
  if (!core.startup_models.empty() && core.model_control != serve::ModelControlMode::kExplicit) {
    Usage("--load-model only applies with --model-control explicit (other modes load every model)");
  }
  if (!core.model_config_file.empty() && core.model_file.empty()) {
    Usage("--config FILE.pbtxt is the config of --model FILE.onnx; a repository model's config is "
          "DIR/<model>/config.pbtxt");
  }
  // Measured memory profiles live beside the converted models, by content.
  if (!core.loader.model_cache_dir.empty()) core.memory_plan.profile_dir = core.loader.model_cache_dir + "/memory";
  for (const std::string& spec : flags.warmup_inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      Usage("--warmup-input '" + spec + "' is not NAME=FILE.npy (or .pb); e.g. --warmup-input sr=sr.npy");
    }
    const std::string name = spec.substr(0, eq);
    auto tensor = bench::ReadTensorFile(spec.substr(eq + 1), name);
    if (!tensor.ok()) Usage("--warmup-input " + spec + ": " + tensor.status().message());
    core.loader.warmup_inputs[name] = std::move(tensor).value();
  }
  for (const std::string& spec : flags.warmup_shapes) {
    Status st = ParseShapeFlag(spec, core.loader.warmup_shapes);
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
    core.loader.default_instance_kind = serve::InstanceKind::kCpu;
    kind_line = "Default instance kind: CPU (--cpu)";
  } else if (gpus.names.empty()) {
    if (core.loader.require_gpu) {
      std::fprintf(stderr,
                   "ortgpu serve: --require-gpu, but no GPU can be used: %s. Run 'ortgpu doctor' to see why, or "
                   "drop --require-gpu to serve on the CPU.\n",
                   gpus.why_none.c_str());
      return 1;
    }
    core.loader.default_instance_kind = serve::InstanceKind::kCpu;
    kind_line = "Default instance kind: CPU, because no GPU can be used (" + gpus.why_none +
                "). Models that ask for KIND_GPU will be UNAVAILABLE; run 'ortgpu doctor' to see why.";
  } else {
    core.loader.default_instance_kind = serve::InstanceKind::kGpu;
    kind_line = "Default instance kind: GPU (" + std::to_string(gpus.names.size()) + " found: " + gpus.names[0] +
                (gpus.names.size() > 1 ? ", ..." : "") + "); --cpu serves on the CPU";
  }

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
              serve::FormatStartupSummary(s.Models(), gpus.names, options.http.host, s.http_port(), s.metrics_port(),
                                          s.grpc_port())
                  .c_str());
  // No stray context (issue 30): memory on a GPU no model uses.
  if (auto nvml = gpu::NewNvml(); nvml && nvml->Load().ok()) {
    const auto& visible = options.core.loader.visible_gpus;
    for (const auto& line : serve::StrayContexts(*nvml, s.Models(), visible ? &*visible : nullptr,
                                                 static_cast<uint32_t>(::getpid()))) {
      std::printf("warning: %s\n", line.c_str());
    }
  }
  std::fflush(stdout);

  const int signal_number = s.WaitForStop();
  spdlog::info("{}: draining (grace period {} ms)", signal_number == SIGINT ? "SIGINT" : "SIGTERM",
               options.drain_timeout.count());
  std::thread second_signal([&s] { ExitOnSecondSignal(s); });
  const bool drained = s.Shutdown();
  s.RequestStop();
  second_signal.join();
  spdlog::info("stopped{}", drained ? "" : " (some requests did not finish within --drain-timeout-ms)");
  return 0;
}

// A flag in milliseconds or microseconds bound to a std::chrono field; its
// default is the field's value.
template <class Duration>
CLI::Option* AddDurationOption(CLI::App& cmd, const std::string& name, Duration& field, const std::string& help) {
  return cmd.add_option_function<int64_t>(name, [&field](int64_t n) { field = Duration(n); }, help)
      ->default_str(std::to_string(field.count()));
}

// A flag naming one of an enum's values, bound to the enum field through its
// Parse and Name functions; its default is the field's value.
template <class Enum, class Parse, class Name>
CLI::Option* AddNamedOption(CLI::App& cmd, const std::string& name, Enum& field, Parse parse, Name name_of,
                            std::vector<std::string> accepted, const std::string& help) {
  return cmd
      .add_option_function<std::string>(
          name, [&field, parse](const std::string& text) { field = *parse(text); }, help)
      ->check(CLI::IsMember(std::move(accepted)))
      ->default_str(std::string(name_of(field)));
}

}  // namespace

void AddServeFlags(CLI::App& cmd, ServeFlags& flags) {
  serve::ServeOptions& o = flags.options;
  serve::ServerOptions& core = o.core;
  // Flags bound to a field show its value as their default in --help.
  cmd.option_defaults()->always_capture_default();
  core.loader.model_cache_dir = precision::DefaultModelCacheDir();

  auto* repo = cmd.add_option("--model-repository", core.repository,
                              "Folder of models: DIR/<model>/[config.pbtxt], DIR/<model>/<version>/model.onnx");
  auto* model = cmd.add_option("--model", core.model_file, "Serve one ONNX file as model <stem>, version 1");
  repo->excludes(model);
  cmd.add_option("--config", core.model_config_file,
                 "With --model: the model's config.pbtxt (Triton's format, e.g. a model_warmup or what "
                 "`ortgpu bench --config-out` wrote)");
  cmd.add_option("--warmup-input", flags.warmup_inputs,
                 "NAME=FILE.npy (or .pb): warm-up uses this tensor for input NAME, as a request would send it "
                 "(batch dim first when the model batches); repeatable")
      ->allow_extra_args(false);
  cmd.add_option("--warmup-shape", flags.warmup_shapes,
                 "NAME:DIMS for generated warm-up inputs, as bench's --shape: input NAME's full shape "
                 "(audio:1x512) or a symbolic dim's size (samples:512); repeatable")
      ->allow_extra_args(false);
  cmd.add_flag("--strict-warmup", core.loader.strict_warmup,
               "A model without model_warmup none of whose generated warm-up inputs runs stays UNAVAILABLE "
               "(default: READY with a warning, docs/SERVING.md)");
  cmd.add_option("--model-cache-dir", core.loader.model_cache_dir,
                 "Where models converted for the precision parameter (fp16, mixed) are kept between loads, by "
                 "content and settings (never beside the model); '' converts at every load "
                 "(docs/SERVING.md, Precision)")
      ->default_str("${XDG_CACHE_HOME:-$HOME/.cache}/ortgpu/models");
  AddNamedOption(
      cmd, "--gpu-memory-plan", core.memory_plan.enabled,
      [](const std::string& text) { return std::optional<bool>(text == "on"); },
      [](bool on) { return on ? "on" : "off"; }, {"on", "off"},
      "on: a GPU load whose predicted memory does not fit the GPU's free memory less the margin is "
      "refused before it allocates (UNAVAILABLE, saying what would fit), and each load's measured profile "
      "is kept in --model-cache-dir/memory for the next plan; off: load without a plan (docs/MEMORY.md)");
  cmd.add_option_function<std::string>(
         "--gpu-memory-margin",
         [&core](const std::string& text) {
           auto margin = serve::ParseMarginPercent(text);
           if (!margin.ok()) throw CLI::ValidationError(margin.status().message());
           core.memory_plan.margin_percent = *margin;
         },
         "PCT: the share of each GPU's memory the plan keeps free (0-90; e.g. 10 or 10%)")
      ->default_str(fmt::format("{}%", core.memory_plan.margin_percent));
  AddNamedOption(cmd, "--model-control", core.model_control, serve::ParseModelControlMode,
                 serve::ModelControlModeName, {"none", "poll", "explicit"},
                 "none: load everything once; poll: rescan every --poll-interval-ms and (re)load changes without "
                 "failing requests; explicit: load --load-model models, then the repository endpoints load/unload");
  cmd.add_option("--poll-interval-ms", core.poll_interval_ms, "Rescan interval with --model-control poll")
      ->check(CLI::Range(int64_t{10}, int64_t{86'400'000}));
  cmd.add_option("--load-model", core.startup_models,
                 "With --model-control explicit: a model to load at start ('*' loads all; repeatable)")
      ->allow_extra_args(false);
  cmd.add_flag("--require-gpu", core.loader.require_gpu,
               "Refuse KIND_CPU instances and models whose compute falls back to the CPU (they become UNAVAILABLE)");
  cmd.add_flag("--cpu", flags.cpu,
               "Default instance kind CPU (KIND_AUTO and models without instance_group); default GPU when one "
               "can be used");
  cmd.add_option("--host", o.http.host, "Address to listen on (HTTP, gRPC and metrics)");
  cmd.add_option("--http-port", o.http.port, "HTTP port; 0: any free port (printed at start)")
      ->check(CLI::Range(0, 65535));
  cmd.add_option("--grpc-port", o.grpc_port,
                 "KServe v2 gRPC port (Triton's GRPCInferenceService and grpc.health.v1); 0: any free port; -1: off")
      ->check(CLI::Range(-1, 65535));
  cmd.add_option("--metrics-port", o.metrics_port, "Prometheus /metrics port; 0: any free port; -1: off")
      ->check(CLI::Range(-1, 65535));
  cmd.add_option("--max-body-bytes", o.http.max_body_bytes,
                 "Larger request bodies get 413 (gRPC: larger messages get RESOURCE_EXHAUSTED)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  AddDurationOption(cmd, "--request-timeout-ms", o.http.request_timeout,
                    "An inference not answered within this gets 504 (gRPC: DEADLINE_EXCEEDED); 0: no limit")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400'000}));
  cmd.add_option("--http-threads", o.http.threads,
                 "Network threads that read, parse and answer HTTP requests; 0: one per core, at most 8")
      ->check(CLI::Range(0, 256));
  auto* pollers = cmd.add_option("--grpc-poller-threads", o.grpc_poller_threads,
                                 "Threads that read, decode and handle gRPC calls (the only threads that read gRPC "
                                 "sockets); 0: one per four cores, 1 to 4")
                      ->check(CLI::Range(0, 256));
  cmd.add_option("--grpc-threads", o.grpc_poller_threads, "Deprecated: the old name of --grpc-poller-threads")
      ->check(CLI::Range(0, 256))
      ->excludes(pollers)
      ->each([](const std::string&) {
        std::fputs("ortgpu serve: --grpc-threads is deprecated: it sets the gRPC pollers; use "
                   "--grpc-poller-threads\n",
                   stderr);
      });
  cmd.add_option_function<int64_t>(
         "--busy-poll-us",
         [&o](int64_t us) {
           o.http.busy_poll = std::chrono::microseconds(us);
           o.core.loader.busy_poll_ns = us * 1000;
         },
         "After a request, one HTTP thread, the gRPC pollers and the instance's workers poll this long for the "
         "next before they sleep, unless requests overlap: lower latency for a lone client at the cost of a core "
         "while it sends; nothing when idle (0: sleep at once)")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000}))
      ->default_str(std::to_string(o.http.busy_poll.count()));
  cmd.add_option_function<int64_t>(
         "--inline-max-us",
         [&o](int64_t us) { o.core.loader.inline_max_run_ns = us * 1000; },
         "A lone request that finds a CPU instance idle runs on the thread that received it, with no hand-over to "
         "the instance's worker and back, when the instance's last batch (scaled to the request's rows) took at "
         "most this long (0: always hand over)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}))
      ->default_str(std::to_string(o.core.loader.inline_max_run_ns / 1000));
  AddDurationOption(cmd, "--drain-timeout-ms", o.drain_timeout,
                    "On SIGTERM/SIGINT, how long requests in flight may take to finish")
      ->check(CLI::Range(int64_t{0}, int64_t{3'600'000}));
  cmd.add_option("--max-connections", o.http.max_connections,
                 "HTTP connections open at once; more are closed at once and counted in "
                 "ortgpu_http_connections_refused_total (0: the file-descriptor limit, ulimit -n, less 64)")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  cmd.add_option("--max-output-bytes", core.max_output_bytes,
                 "The most bytes of outputs one inference may return (400 past it; refused before the run when the "
                 "config's output dims are fixed); 0: no limit")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 50));
  cmd.add_option("--allow-host", o.http.access.allowed_hosts,
                 "A Host name clients use to reach the server (repeatable; '*': any). IP addresses and localhost "
                 "are always accepted; other names get 403, which stops DNS-rebinding pages")
      ->allow_extra_args(false);
  cmd.add_option("--allow-origin", o.http.access.allowed_origins,
                 "An Origin (https://app.example.com) whose browser requests are accepted (repeatable; '*': any); "
                 "other cross-origin requests get 403")
      ->allow_extra_args(false);
  cmd.add_option("--auth-token-file", flags.auth_token_file,
                 "File whose first line is a token that the repository endpoints (index, load, unload), /v2/logging, "
                 "the trace settings and shared-memory register/unregister must send as "
                 "'Authorization: Bearer TOKEN' over HTTP (401 otherwise), and their gRPC RPCs as the metadata "
                 "'authorization: Bearer TOKEN' (UNAUTHENTICATED otherwise)");
  AddNamedOption(cmd, "--access-log", o.http.access_log, serve::ParseAccessLogFormat, serve::AccessLogFormatName,
                 {"none", "plain", "json"}, "One line per request on stderr: none, plain or json");
  cmd.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  // Repeatable flags start empty: no default to show.
  for (CLI::Option* opt : cmd.get_options()) {
    if (opt->get_default_str() == "[]") opt->default_str("");
  }
}

void AddServeCommand(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve ONNX models over HTTP and gRPC with the KServe v2 / Triton protocol (docs/PROTOCOL.md) from a Triton-style "
      "model repository (docs/SERVING.md), with dynamic batching and Prometheus metrics. SIGTERM/SIGINT drain "
      "and exit 0; exit 1 when the server cannot start, 2 on bad usage.");
  AddServeFlags(*cmd, *flags);
  cmd->callback([flags, &result]() { result.exit_code = RunServeCommand(*flags); });
}

}  // namespace ortgpu::cli
