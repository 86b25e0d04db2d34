#include "perf/perf.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "bench/benchmark.h"
#include "bench/statistics.h"
#include "ort/random_inputs.h"
#include "perf/client.h"
#include "perf/grpc_client.h"
#include "perf/search.h"
#include "perf/served_config.h"

namespace ortgpu::perf {
namespace {

using std::chrono::milliseconds;

std::string ErrorKey(int status) {
  if (status == kTimeout) return "timeout";
  if (status == kTransportError) return "connection";
  if (status >= kGrpcStatusBase) return fmt::format("gRPC code {}", status - kGrpcStatusBase);
  return std::to_string(status);
}

// The statistics extension and the Prometheus metrics, read around windows.
// The first failure of either becomes one note and turns that source off.
class ServerProbe {
 public:
  ServerProbe(const PerfOptions& o, HttpEndpoint server, std::optional<HttpEndpoint> metrics, PerfReport& report)
      : options_(o), server_(std::move(server)), metrics_(std::move(metrics)), report_(report),
        timeout_(std::min(o.request_timeout, milliseconds(5000))) {}

  std::optional<InferenceCounters> ReadStats() {
    if (!stats_on_) return std::nullopt;
    const std::string target = ModelPath(options_.model, options_.version, "/stats");
    auto r = Fetch(server_, target, timeout_);
    Expected<InferenceCounters> c = !r.ok() ? Expected<InferenceCounters>(r.status())
                                    : r->status != 200
                                        ? Expected<InferenceCounters>(NotFound(fmt::format("GET {} answered HTTP {}", target, r->status)))
                                        : ParseModelStatistics(r->body, options_.model, options_.version);
    if (!c.ok()) {
      stats_on_ = false;
      report_.server_statistics = false;
      report_.notes.push_back("no server-side split: the server's statistics extension is not usable (" + c.status().message() +
                              "); client-side figures only");
      return std::nullopt;
    }
    report_.server_statistics = true;
    return *c;
  }

  std::optional<GpuSample> ScrapeGpu() {
    if (!metrics_) return std::nullopt;
    const std::string url = "http://" + metrics_->authority() + metrics_->path;
    auto r = Fetch(*metrics_, metrics_->path.empty() ? "/metrics" : metrics_->path, timeout_);
    std::string problem;
    std::optional<GpuSample> gpu;
    if (!r.ok()) {
      problem = r.status().message();
    } else if (r->status != 200) {
      problem = fmt::format("{} answered HTTP {}", url, r->status);
    } else if (!(gpu = GpuFromMetrics(ParsePrometheusText(r->body)))) {
      problem = url + " has no nv_gpu_utilization or nv_cpu_utilization series (a server without GPU or CPU metrics)";
    }
    if (!problem.empty()) {
      metrics_.reset();
      report_.notes.push_back("no GPU utilisation or memory: " + problem + "; set --metrics-url to the server's metrics");
    }
    return gpu;
  }

 private:
  const PerfOptions& options_;
  HttpEndpoint server_;
  std::optional<HttpEndpoint> metrics_;
  PerfReport& report_;
  milliseconds timeout_;
  bool stats_on_ = true;
};

// Cuts the client's completions into windows of wall time and reads the
// server's counters at each boundary.
class WindowSource {
 public:
  WindowSource(LoadGenerator& client, ServerProbe& probe, int64_t window_ms)
      : client_(client), probe_(probe), window_ns_(window_ms * 1'000'000), stats_before_(probe.ReadStats()),
        start_ns_(SteadyNowNs()) {}

  // The next window: waits for its end, then cuts.
  Window Next() {
    const int64_t end_ns = start_ns_ + window_ns_;
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(end_ns)));
    return Cut(end_ns);
  }

  // Everything completed since the previous cut (a fixed count's one window).
  Window CutNow() { return Cut(SteadyNowNs() + 1); }

 private:
  Window Cut(int64_t end_ns) {
    client_.TakeCompletions(pending_);
    Window w;
    w.duration_s = static_cast<double>(end_ns - start_ns_) / 1e9;
    w.latencies_ms.reserve(pending_.size());
    size_t kept = 0;
    for (const Completion& c : pending_) {
      if (c.end_ns >= end_ns) {
        pending_[kept++] = c;  // finished after this window: the next one's
        continue;
      }
      if (c.status == 200) {
        w.latencies_ms.push_back(static_cast<double>(c.latency_ns) / 1e6);
      } else {
        ++w.errors[ErrorKey(c.status)];
      }
      if (c.delayed) ++w.delayed;
    }
    pending_.resize(kept);
    if (stats_before_) {
      auto after = probe_.ReadStats();
      if (after) w.server = *after - *stats_before_;
      stats_before_ = after;
    }
    w.gpu = probe_.ScrapeGpu();
    start_ns_ = end_ns;
    return w;
  }

  LoadGenerator& client_;
  ServerProbe& probe_;
  int64_t window_ns_;
  std::optional<InferenceCounters> stats_before_;  // read before start_ns_ is taken
  int64_t start_ns_;
  std::vector<Completion> pending_;
};

struct StepContext {
  const PerfOptions& options;
  const HttpEndpoint& endpoint;
  const std::vector<EncodedRequest>& requests;
  // With --protocol grpc: the target and the request sent instead.
  const std::string& grpc_target;
  const inference::ModelInferRequest& grpc_request;
  ServerProbe& probe;
  const PerfHooks& hooks;
  const PerfReport& report;
};

// --request-count: waits until the client has that many answers (or makes
// no progress for a request timeout and a window), then cuts one window.
StepMeasurement MeasureCountStep(const PerfOptions& o, LoadGenerator& client, WindowSource& source,
                                 const std::function<void()>& progress) {
  const milliseconds slice(o.measure.window_ms);
  int64_t last = 0;
  auto last_progress = std::chrono::steady_clock::now();
  while (!client.WaitForCompleted(o.request_count, slice)) {
    if (progress) progress();
    const auto now = std::chrono::steady_clock::now();
    if (client.completed() > last) {
      last = client.completed();
      last_progress = now;
    } else if (now - last_progress > o.request_timeout + slice) {
      break;  // nothing answers, not even with a timeout: report what came
    }
  }
  StepMeasurement m;
  m.stable = true;  // a fixed count has no stability check
  m.merged = source.CutNow();
  m.windows.push_back(Summarize(m.merged, o.measure.percentile));
  m.all_failed = m.merged.latencies_ms.empty() && !m.merged.errors.empty();
  if (m.all_failed) m.note = "every request failed (" + DescribeErrors(m.merged.errors) + ")";
  return m;
}

Expected<StepResult> RunStep(const StepContext& ctx, double load) {
  const PerfOptions& o = ctx.options;
  ClientOptions co;
  co.threads = o.threads;
  co.busy_poll = o.busy_poll;
  co.request_timeout = o.request_timeout;
  co.seed = o.inputs.seed;
  co.request_limit = o.request_count;
  if (o.mode == LoadMode::kConcurrency) {
    co.connections = static_cast<int>(load);
  } else {
    co.rate_per_s = load;
    co.distribution = o.distribution;
    co.connections = o.rate_connections;
  }
  StepResult step;
  step.load = load;
  const std::string label = StepLabel(ctx.report, step);
  std::unique_ptr<LoadGenerator> client;
  if (o.protocol == Protocol::kGrpc) {
    ORTGPU_ASSIGN_OR_RETURN(client, GrpcLoadClient::Start(ctx.grpc_target, ctx.grpc_request, co));
  } else {
    ORTGPU_ASSIGN_OR_RETURN(client, LoadClient::Start(ctx.endpoint, ctx.requests, co));
  }
  WindowSource source(*client, ctx.probe, o.measure.window_ms);
  int window = 0;
  auto next = [&]() -> Expected<Window> {
    Window w = source.Next();
    ++window;
    if (ctx.hooks.progress) {
      const WindowSummary s = Summarize(w, o.measure.percentile);
      ctx.hooks.progress(fmt::format("{}: window {}/{}: {:.1f} infer/s, p{:g} {:.3f} ms{}", label, window, o.measure.max_trials,
                                     s.throughput, o.measure.percentile, s.latency_ms,
                                     s.errors ? fmt::format(", {} errors", s.errors) : ""));
    }
    return w;
  };
  auto count_progress = [&] {
    if (ctx.hooks.progress) ctx.hooks.progress(fmt::format("{}: {}/{} requests", label, client->completed(), o.request_count));
  };
  auto measured = o.request_count > 0 ? Expected<StepMeasurement>(MeasureCountStep(o, *client, source, count_progress))
                                      : MeasureStep(o.measure, next);
  client->Stop(std::min(o.request_timeout, milliseconds(1000)));
  if (!measured.ok()) return measured.status();
  const Window& w = measured->merged;
  step.stable = measured->stable;
  step.failed = measured->all_failed;
  step.note = measured->note;
  step.windows = measured->windows;
  step.latency = bench::ComputeStatistics(w.latencies_ms, w.duration_s, o.rows);
  if (!w.latencies_ms.empty()) {
    std::vector<double> sorted = w.latencies_ms;
    std::sort(sorted.begin(), sorted.end());
    step.budget_latency_ms = bench::Percentile(sorted, o.budget_percentile);
  }
  step.requests = static_cast<int64_t>(w.latencies_ms.size());
  if (o.goodput_budget_ms && w.duration_s > 0) {
    const double budget = *o.goodput_budget_ms;
    const auto within = std::count_if(w.latencies_ms.begin(), w.latencies_ms.end(), [budget](double l) { return l <= budget; });
    step.goodput = static_cast<double>(within) / w.duration_s;
  }
  step.throughput = step.latency.runs_per_s;
  step.items_per_s = step.latency.items_per_s;
  step.errors = w.errors;
  step.delayed = w.delayed;
  step.gpu = w.gpu;
  if (w.server) step.server = ComputeSplit(*w.server);
  if (step.server && step.requests > 0) step.outside_server_us = step.latency.mean_ms * 1000 - step.server->request_us;
  if (step.requests == 0 && step.error_count() == 0) {
    step.failed = true;
    const std::string why = client->first_transport_error();
    step.note = fmt::format("no request completed in {} windows of {} ms: {}", measured->windows.size(), o.measure.window_ms,
                            why.empty() ? "the server did not answer" : why);
  } else if (step.failed) {
    const std::string why = client->first_transport_error();
    if (!why.empty()) step.note += "; first failure: " + why;
  }
  return step;
}

// The in-process run as serve runs the model (ServedSetup): its EP options
// and I/O from the served configuration, the batch the load made the server
// run in the best step, the request's own shapes.
void CompareInProcess(const PerfOptions& o, const ModelInfo& model, const std::vector<Tensor>& request, PerfReport& report) {
  InProcessComparison c;
  c.model_path = o.compare_model;
  const StepResult* best = nullptr;
  for (const auto& s : report.steps) {
    if (!s.failed && (best == nullptr || s.items_per_s > best->items_per_s)) best = &s;
  }
  if (best != nullptr) c.served_items_per_s = best->items_per_s;
  ServedSetup setup;
  c.config_source = "GET " + ModelPath(o.model, o.version, "/config");
  if (model.config_json.empty()) {
    setup.max_batch_size = model.max_batch_size;
    c.config_source = "none (the server answered no " + c.config_source + "): ONNX Runtime's default options";
  } else if (auto parsed = ParseServedSetup(model.config_json); parsed.ok()) {
    setup = std::move(parsed).value();
  } else {
    c.rows.push_back({o.rows, 0, 0, parsed.status().message()});
    report.comparison = std::move(c);
    return;
  }
  if (!setup.cuda_graph_note.empty()) c.notes.push_back(setup.cuda_graph_note);
  if (!setup.precision_note.empty()) c.notes.push_back(setup.precision_note);
  const double average_batch = best != nullptr && best->server ? best->server->average_batch : 0;
  const int64_t batch = ServedBatch(setup, o.rows, average_batch);
  if (!setup.dynamic_batching) {
    c.batch_source = fmt::format("the request's {} row(s): the served model does not batch requests together", o.rows);
  } else if (average_batch > 0) {
    c.batch_source = fmt::format("the server ran {:.1f} rows per execution in the best step{}", average_batch,
                                 setup.pads ? ", padded to its preferred batch size" : "");
  } else {
    c.batch_source = "the served configuration's largest preferred batch size (the server's statistics gave no batch size)";
  }
  ComparisonRow row;
  row.batch = batch;
  auto run = InProcessRunFor(setup, o.compare_model, o.compare_provider, request, o.inputs, batch);
  if (!run.ok()) {
    row.error = run.status().message();
  } else {
    c.provider = std::string(ProviderName(run->options.session.provider));
    c.io = run->io;
    c.cuda_options = run->cuda_options;
    c.shapes = run->shapes;
    c.command = run->command;
    run->options.load.duration_s = std::max(0.5, static_cast<double>(o.measure.window_ms) / 1000.0);
    auto r = bench::RunBenchmark(run->options);
    if (!r.ok()) {
      row.error = r.status().message();
    } else if (r->results.empty() || !r->results.front().error.ok()) {
      row.error = r->results.empty() ? "no result" : r->results.front().error.message();
    } else {
      row.in_process_items_per_s = r->results.front().stats.items_per_s;
      row.in_process_p50_ms = r->results.front().stats.p50_ms;
      c.best_in_process_items_per_s = row.in_process_items_per_s;
    }
  }
  c.rows.push_back(row);
  if (c.served_items_per_s > 0 && c.best_in_process_items_per_s > 0) c.ratio = c.served_items_per_s / c.best_in_process_items_per_s;
  report.comparison = std::move(c);
}

// The input flags that apply to `model` (its inputs, or its symbolic dims).
bench::InputSpec InputsOf(const ModelInfo& model, bench::InputSpec spec) {
  spec.shapes = ShapeFlagsFor(model.inputs, spec.shapes);
  auto has_input = [&](const std::string& name) {
    return std::any_of(model.inputs.begin(), model.inputs.end(), [&](const TensorInfo& t) { return t.name == name; });
  };
  for (auto it = spec.int_ranges.begin(); it != spec.int_ranges.end();) it = has_input(it->first) ? std::next(it) : spec.int_ranges.erase(it);
  for (auto it = spec.files.begin(); it != spec.files.end();) it = has_input(it->first) ? std::next(it) : spec.files.erase(it);
  return spec;
}

}  // namespace

Expected<Protocol> ParseProtocol(std::string_view name) {
  if (name == "http") return Protocol::kHttp;
  if (name == "grpc") return Protocol::kGrpc;
  return InvalidArgument(fmt::format("--protocol '{}' is not one of: http, grpc", name));
}

Expected<PerfReport> RunPerf(const PerfOptions& o, const PerfHooks& hooks) {
  if (o.model.empty()) return InvalidArgument("--model is required: the name of the served model");
  ORTGPU_ASSIGN_OR_RETURN(HttpEndpoint endpoint, ParseHttpUrl(o.url, "--url"));
  std::optional<HttpEndpoint> metrics;
  if (o.metrics_url != "off") {
    if (o.metrics_url.empty()) {
      metrics = HttpEndpoint{endpoint.host, 8002, "/metrics"};
    } else {
      ORTGPU_ASSIGN_OR_RETURN(metrics, ParseHttpUrl(o.metrics_url, "--metrics-url"));
    }
  }
  PerfReport report;
  report.url = "http://" + endpoint.authority();
  std::string grpc_target = o.grpc_url.empty() ? endpoint.host + ":8001" : o.grpc_url;
  if (grpc_target.rfind("grpc://", 0) == 0) grpc_target = grpc_target.substr(7);
  if (o.protocol == Protocol::kGrpc) report.url = "grpc://" + grpc_target;
  report.model = o.model;
  report.version = o.version;
  report.mode = o.mode;
  report.distribution = std::string(DistributionName(o.distribution));
  report.format = o.format;
  report.rows = o.rows;
  report.request_count = o.request_count;
  report.measure = o.measure;

  ORTGPU_ASSIGN_OR_RETURN(ModelInfo model, FetchModelInfo(endpoint, o.model, o.version, std::min(o.request_timeout, milliseconds(10000))));
  report.max_batch_size = model.max_batch_size;
  if (model.max_batch_size > 0 && o.rows > model.max_batch_size) {
    return InvalidArgument(fmt::format("--batch {} is more than the model's max_batch_size {}; the server would refuse every request",
                                       o.rows, model.max_batch_size));
  }
  bench::InputSpec spec = o.inputs;
  if (o.inputs_of_this_model_only) spec = InputsOf(model, spec);
  ORTGPU_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, MakeRequestInputs(model, spec, o.rows));
  std::unique_ptr<SharedMemoryRegions> shm;  // registered for the whole run
  if (o.shared_memory.mode != SharedMemoryMode::kNone) {
    const auto timeout = std::min(o.request_timeout, milliseconds(10000));
    ORTGPU_ASSIGN_OR_RETURN(
        shm, SharedMemoryRegions::Create(o.shared_memory, inputs, model.outputs.size(),
                                         [endpoint, timeout](const std::string& target, const std::string& body) {
                                           return Post(endpoint, target, body, timeout);
                                         }));
    report.notes.push_back(fmt::format(
        "inputs and outputs in {} shared memory (regions {} and {}): requests carry no tensor bytes",
        o.shared_memory.mode == SharedMemoryMode::kCuda ? "CUDA" : "system", shm->plan().inputs.empty() ? "-" : shm->plan().inputs[0].region,
        shm->plan().outputs.empty() ? "-" : shm->plan().outputs[0].region));
  }
  const SharedMemoryPlan* plan = shm ? &shm->plan() : nullptr;
  ORTGPU_ASSIGN_OR_RETURN(EncodedRequest request, EncodeInferRequest(model, inputs, o.format, endpoint.authority(), plan));
  const std::vector<EncodedRequest> requests = {std::move(request)};
  inference::ModelInferRequest grpc_request;
  if (o.protocol == Protocol::kGrpc) {
    ORTGPU_ASSIGN_OR_RETURN(grpc_request, EncodeGrpcInferRequest(model, inputs, plan));
  }

  if (o.protocol == Protocol::kGrpc && o.busy_poll) {
    report.notes.push_back(fmt::format(
        "--busy-poll over gRPC applies to concurrency steps of up to {} requests; larger and rate steps run on "
        "gRPC's own threads, which sleep until a response comes",
        kOnePollerPerCallMaxConcurrency));
  }
  ServerProbe probe(o, endpoint, metrics, report);
  const StepContext ctx{o, endpoint, requests, grpc_target, grpc_request, probe, hooks, report};
  const double percentile = o.budget_percentile;
  if (o.latency_budget_ms) {
    BudgetOptions bo;
    bo.budget_ms = *o.latency_budget_ms;
    bo.integer = o.mode == LoadMode::kConcurrency;
    if (bo.integer) {
      bo.start = o.concurrency.empty() ? 1 : o.concurrency.front();
      bo.max = std::max<double>(bo.start, o.max_concurrency);
    } else {
      bo.start = o.rates.empty() ? 10 : o.rates.front();
      bo.max = std::max(bo.start, o.max_rate);
    }
    auto result = SearchLatencyBudget(bo, [&](double load) -> Expected<SearchPoint> {
      ORTGPU_ASSIGN_OR_RETURN(StepResult s, RunStep(ctx, load));
      report.steps.push_back(s);
      return SearchPoint{load, s.throughput, s.budget_latency_ms, s.failed || s.error_count() > 0};
    });
    if (!result.ok()) return result.status();
    BudgetSummary b;
    b.budget_ms = bo.budget_ms;
    b.percentile = percentile;
    b.best = result->best;
    if (b.best) b.best_latency_ms = result->points[*b.best].latency_ms;
    b.note = result->note;
    report.budget = b;
  } else {
    std::vector<double> loads;
    if (o.mode == LoadMode::kConcurrency) {
      for (int c : o.concurrency) loads.push_back(c);
    } else {
      loads = o.rates;
    }
    for (size_t i = 0; i < loads.size(); ++i) {
      ORTGPU_ASSIGN_OR_RETURN(StepResult s, RunStep(ctx, loads[i]));
      report.steps.push_back(s);
      if (s.failed) {
        if (i + 1 < loads.size()) report.notes.push_back("stopped the sweep at " + StepLabel(report, s) + ": " + s.note);
        break;
      }
    }
  }
  if (!o.compare_model.empty()) {
    if (hooks.on_compare) hooks.on_compare();
    CompareInProcess(o, model, inputs, report);
  }
  return report;
}

}  // namespace ortgpu::perf
