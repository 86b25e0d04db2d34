#include "serve/server.h"

#include <algorithm>
#include <csignal>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "serve/grpc/grpc_server.h"
#include "serve/metrics/connection_metrics.h"
#include "serve/metrics/gpu_metrics.h"
#include "serve/metrics/metrics_server.h"
#include "serve/metrics/scheduler_metrics.h"

namespace ortgpu::serve {

// The asio signal_set records SIGTERM/SIGINT from its own (async-signal-safe)
// handler; WaitForStop runs the io_context that delivers them as completions.
// Signals that arrive before WaitForStop are queued by the signal_set.
struct Server::SignalWatch {
  explicit SignalWatch(bool handle_signals) {
    if (handle_signals) signals.emplace(ioc, SIGTERM, SIGINT);
  }
  boost::asio::io_context ioc;
  std::optional<boost::asio::signal_set> signals;
  int last_signal = 0;  // written by completions run inside WaitForStop
};

namespace {

ModelSummary Summarize(const ModelVersionStatus& status, const LoadedModel* loaded) {
  ModelSummary s;
  s.name = status.name;
  s.version = status.version;
  s.state = status.state;
  s.reason = status.reason;
  if (loaded == nullptr) return s;
  const auto& config = loaded->config;
  s.max_batch_size = config.max_batch_size();
  s.dynamic_batching = config.max_batch_size() > 0 && config.has_dynamic_batching();
  s.padded = loaded->batching.pad_to_preferred_batch_size;
  s.warmup = loaded->warmup.Brief();
  s.padding = loaded->padding;
  s.completed = loaded->completed;
  if (!loaded->warmup.warning.empty()) s.warnings.push_back(loaded->warmup.warning);
  if (!loaded->cuda_graph_warning.empty()) s.warnings.push_back(loaded->cuda_graph_warning);
  if (!loaded->precision.precision.empty()) s.precision = loaded->precision.Describe();
  s.memory = loaded->memory.Describe();
  if (loaded->precision.checked && !loaded->precision.within_budget()) {
    s.warnings.push_back("served outside the accuracy budget (precision_check warn): " +
                         loaded->precision.violations.front());
  }
  // Where the loader placed the instances that serve (a GPU that failed
  // is not among them, and says why as a warning).
  for (const auto& [gpu, n] : InstancesPerGpu(loaded->instances)) {
    s.gpus.push_back(gpu);
    s.instances_per_gpu.push_back(n);
  }
  s.on_gpu = !s.gpus.empty();
  s.instances = static_cast<int>(loaded->instances.size());
  if (!loaded->failed_gpus.empty()) s.warnings.push_back(DescribeGpuFailures(loaded->failed_gpus));
  for (const auto& f : loaded->failed_gpus) s.failed_gpus.push_back(f.gpu);
  return s;
}

std::string DeviceText(const ModelSummary& m, const std::vector<std::string>& gpu_names) {
  if (!m.on_gpu) return "CPU";
  std::string out;
  for (size_t i = 0; i < m.gpus.size(); ++i) {
    const int d = m.gpus[i];
    if (!out.empty()) out += ", ";
    out += "GPU " + std::to_string(d);
    if (d >= 0 && static_cast<size_t>(d) < gpu_names.size()) out += " (" + gpu_names[d] + ")";
    // Instances per GPU when the model spans several.
    if (m.gpus.size() > 1 && i < m.instances_per_gpu.size()) out += " x" + std::to_string(m.instances_per_gpu[i]);
  }
  return out;
}

}  // namespace

Expected<std::unique_ptr<Server>> Server::Start(ServeOptions options, ServeDeps deps) {
  std::unique_ptr<Server> s(new Server());
  s->options_ = options;
  s->signals_ = std::make_unique<SignalWatch>(options.handle_signals);
  s->metrics_ = std::make_unique<Metrics>();
  auto observer = std::make_unique<SchedulerMetrics>(*s->metrics_);
  if (options.core.loader.visible_gpus) observer->SetGpuUuids(options.core.loader.visible_gpus->uuids);
  s->observer_ = std::move(observer);
  deps.core.observer = s->observer_.get();
  if (!deps.core.nvml_factory) deps.core.nvml_factory = deps.nvml_factory;

  ORTGPU_ASSIGN_OR_RETURN(s->core_, ServerCore::Create(options.core, deps.core));
  for (const auto& w : s->core_->Warnings()) spdlog::debug("config: {}", w);  // already logged by the core

  s->settings_ = std::make_unique<RuntimeSettings>();
  HttpOptions http_options = options.http;
  http_options.settings = s->settings_.get();
  if (!http_options.connection_events.refused && !http_options.connection_events.open) {
    http_options.connection_events = ConnectionMetrics(*s->metrics_);
  }
  auto http = HttpServer::Start(*s->core_, std::move(http_options));
  if (!http.ok()) {
    s->core_->Shutdown();
    return http.status().WithContext("HTTP endpoint (--host/--http-port)");
  }
  s->http_ = std::move(http).value();

  if (options.grpc_port >= 0) {
    GrpcOptions go;
    go.host = options.http.host;
    go.port = static_cast<uint16_t>(options.grpc_port);
    go.max_message_bytes = options.http.max_body_bytes;
    go.request_timeout = options.http.request_timeout;
    go.threads = options.grpc_threads;
    go.poller_threads = options.grpc_poller_threads;
    go.busy_poll = options.http.busy_poll;
    go.auth_token = options.http.access.auth_token;
    auto grpc = GrpcServer::Start(*s->core_, *s->settings_, go);
    if (!grpc.ok()) {
      s->http_->Stop();
      s->core_->Shutdown();
      return grpc.status().WithContext("gRPC endpoint (--grpc-port; -1 disables it)");
    }
    s->grpc_ = std::move(grpc).value();
  }

  if (options.metrics_port >= 0) {
    MetricsServerOptions mo;
    mo.host = options.http.host;
    mo.port = static_cast<uint16_t>(options.metrics_port);
    mo.access = options.http.access;
    auto ms = MetricsServer::Start(*s->metrics_, mo);
    if (!ms.ok()) {
      s->http_->Stop();
      s->core_->Shutdown();
      if (s->grpc_) s->grpc_->Stop();
      return ms.status().WithContext("metrics endpoint (--metrics-port; -1 disables it)");
    }
    s->metrics_server_ = std::move(ms).value();
    GpuPollerOptions po;
    po.interval = options.gpu_poll_interval;
    po.host = deps.host_fs != nullptr ? deps.host_fs : &RealFileSystem();
    s->gpu_poller_ = std::make_unique<GpuMetricsPoller>(deps.nvml_factory ? deps.nvml_factory() : gpu::NewNvml(),
                                                        *s->metrics_, po);
    if (!s->gpu_poller_->gpus()) {
      spdlog::info("GPU metrics off: NVML not available ({})", s->gpu_poller_->load_status().message());
    }
  }
  return s;
}

Server::~Server() { Shutdown(); }

uint16_t Server::http_port() const { return http_->port(); }

std::optional<uint16_t> Server::metrics_port() const {
  if (!metrics_server_) return std::nullopt;
  return metrics_server_->port();
}

std::optional<uint16_t> Server::grpc_port() const {
  if (!grpc_) return std::nullopt;
  return grpc_->port();
}

bool Server::gpu_metrics() const { return gpu_poller_ && gpu_poller_->gpus() && gpu_poller_->running(); }

std::vector<ModelSummary> Server::Models() const {
  std::vector<ModelSummary> out;
  for (const auto& status : core_->RepositoryIndex(/*ready_only=*/false)) {
    auto loaded = core_->FindLoaded(status.name, status.version);
    out.push_back(Summarize(status, loaded.get()));
  }
  return out;
}

int Server::WaitForStop() {
  auto guard = boost::asio::make_work_guard(signals_->ioc);
  signals_->last_signal = 0;
  if (signals_->signals) {
    SignalWatch* watch = signals_.get();
    watch->signals->async_wait([watch](const boost::system::error_code& ec, int signal_number) {
      if (ec) return;  // cancelled by RequestStop
      watch->last_signal = signal_number;
      watch->ioc.stop();
    });
  }
  // Restarted first: the previous call's work guard, released after its
  // run() returned, left the io_context stopped (no work), and a second
  // call (the second-signal watch of `ortgpu serve`) must block again.
  signals_->ioc.restart();
  signals_->ioc.run();
  return signals_->last_signal;
}

void Server::RequestStop() {
  boost::asio::post(signals_->ioc, [this] {
    if (signals_->signals) signals_->signals->cancel();
    signals_->ioc.stop();
  });
}

// How long the 503s of a drain that timed out may take to be written
// before the connections are closed.
constexpr std::chrono::milliseconds kReplyGrace{1000};

bool Server::Shutdown() {
  if (shut_down_) return drained_;
  shut_down_ = true;
  if (grpc_) grpc_->BeginDrain();
  if (http_) {
    http_->BeginDrain();
    const int in_flight = http_->in_flight() + (grpc_ ? grpc_->in_flight() : 0);
    if (in_flight > 0) {
      spdlog::info("draining: waiting up to {} ms for {} request(s) in flight", options_.drain_timeout.count(),
                   in_flight);
    }
    const auto drain_end = std::chrono::steady_clock::now() + options_.drain_timeout;
    drained_ = http_->WaitIdle(options_.drain_timeout);
    if (grpc_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(drain_end -
                                                                              std::chrono::steady_clock::now());
      drained_ = grpc_->WaitIdle(std::max(left, std::chrono::milliseconds(0))) && drained_;
    }
    if (!drained_) {
      spdlog::warn("drain timeout ({} ms, --drain-timeout-ms) passed with {} request(s) still in flight; answering "
                   "them 503 and dropping those still queued",
                   options_.drain_timeout.count(), http_->in_flight() + (grpc_ ? grpc_->in_flight() : 0));
      // What cannot finish in time is answered now and cancelled, so the
      // scheduler drops it instead of running it after the drain.
      http_->AnswerPending(Unavailable(fmt::format(
          "the server is shutting down and the request could not finish within the drain timeout of {} ms; retry "
          "on another instance",
          options_.drain_timeout.count())));
      (void)http_->WaitIdle(kReplyGrace);
    }
    http_->Stop();
  }
  if (core_) core_->Shutdown();
  // After the core: it completes the infers still queued, and the gRPC
  // server's Stop waits for those completions.
  if (grpc_) grpc_->Stop();
  if (metrics_server_) metrics_server_->Stop();
  if (gpu_poller_) gpu_poller_->Stop();
  return drained_;
}

std::string FormatStartupSummary(const std::vector<ModelSummary>& models, const std::vector<std::string>& gpu_names,
                                 const std::string& host, uint16_t http_port, std::optional<uint16_t> metrics_port,
                                 std::optional<uint16_t> grpc_port) {
  std::vector<std::vector<std::string>> rows = {
      {"MODEL", "VERSION", "STATE", "DEVICE", "INSTANCES", "MAX_BATCH_SIZE", "DYNAMIC_BATCHING", "WARMUP"}};
  for (const auto& m : models) {
    const bool ready = m.state == ModelState::kReady;
    rows.push_back({m.name, m.version, std::string(ModelStateName(m.state)), ready ? DeviceText(m, gpu_names) : "-",
                    ready ? std::to_string(m.instances) : "-", ready ? std::to_string(m.max_batch_size) : "-",
                    ready ? (m.dynamic_batching ? (m.padded ? "on, padded" : "on") : "off") : "-",
                    ready && !m.warmup.empty() ? m.warmup : "-"});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  if (models.empty()) out += "No models in the repository.\n";
  for (size_t r = 0; r < rows.size() && !models.empty(); ++r) {
    std::string line;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      line += i + 1 < rows[r].size() ? fmt::format("{:<{}}  ", rows[r][i], width[i]) : rows[r][i];
    }
    out += line + "\n";
    if (r > 0 && !models[r - 1].reason.empty() && models[r - 1].state != ModelState::kReady) {
      out += "    reason: " + models[r - 1].reason + "\n";
    }
    if (r > 0 && models[r - 1].state == ModelState::kReady) {
      if (!models[r - 1].completed.empty()) {
        std::string what;
        for (const auto& c : models[r - 1].completed) what += (what.empty() ? "" : "; ") + c;
        out += "    completed from the model: " + what + " (GET /v2/models/" + models[r - 1].name + "/config)\n";
      }
      if (!models[r - 1].padding.empty()) out += "    padding: " + models[r - 1].padding + "\n";
      if (!models[r - 1].precision.empty()) out += "    precision: " + models[r - 1].precision + "\n";
      if (!models[r - 1].memory.empty()) out += "    memory: " + models[r - 1].memory + "\n";
      for (const auto& w : models[r - 1].warnings) out += "    warning: " + w + "\n";
    }
  }
  const std::string shown_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  out += fmt::format("HTTP: http://{}:{}\n", shown_host, http_port);
  if (metrics_port) {
    out += fmt::format("metrics: http://{}:{}/metrics\n", shown_host, *metrics_port);
  } else {
    out += "metrics: off\n";
  }
  out += grpc_port ? fmt::format("gRPC: {}:{}\n", shown_host, *grpc_port) : std::string("gRPC: off\n");
  return out;
}

}  // namespace ortgpu::serve
