#include "tune/tool_measurer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <regex>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "bench/benchmark.h"
#include "bench/precisions.h"
#include "bench/statistics.h"
#include "perf/perf.h"
#include "tune/config_writer.h"
#include "sys/child_process.h"

namespace ortgpu::tune {
namespace fs = std::filesystem;
namespace {

// The ports serve's start-up summary names ("HTTP: http://HOST:PORT",
// "metrics: http://HOST:PORT/metrics" or "metrics: off").
struct ServePorts {
  int http = 0;
  int metrics = 0;  // 0: off
};

std::optional<ServePorts> FindServePorts(const std::string& output) {
  static const std::regex kHttpLine(R"(HTTP: http://[^\s]+:(\d+)\n)");
  static const std::regex kMetricsLine(R"(metrics: (?:http://[^\s]+:(\d+)/metrics|off)\n)");
  std::smatch http;
  std::smatch metrics;
  if (!std::regex_search(output, http, kHttpLine) || !std::regex_search(output, metrics, kMetricsLine)) return std::nullopt;
  return ServePorts{std::stoi(http[1].str()), metrics[1].matched ? std::stoi(metrics[1].str()) : 0};
}

}  // namespace

std::map<std::string, std::string> EngineCudaOptions(const EngineChoice& engine) {
  std::map<std::string, std::string> out;
  if (engine.prefer_nhwc) out["prefer_nhwc"] = "1";
  if (engine.conv_search != EngineChoice().conv_search) {
    out["cudnn_conv_algo_search"] = std::string(ConvAlgoSearchName(engine.conv_search));
  }
  return out;
}

Status WriteModelFolder(const std::string& dir, const std::string& model_path, const std::string& config_pbtxt) {
  std::error_code ec;
  const fs::path version = fs::path(dir) / "1";
  fs::create_directories(version, ec);
  if (ec) return InvalidArgument("cannot create " + version.string() + ": " + ec.message());
  const fs::path target = version / "model.onnx";
  fs::remove(target, ec);
  fs::create_hard_link(model_path, target, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(model_path, target, fs::copy_options::overwrite_existing, ec);
    if (ec) return InvalidArgument("cannot copy " + model_path + " to " + target.string() + ": " + ec.message());
  }
  const fs::path config = fs::path(dir) / "config.pbtxt";
  std::ofstream out(config, std::ios::binary | std::ios::trunc);
  out << config_pbtxt;
  out.close();
  if (!out) return InvalidArgument("cannot write " + config.string());
  return Status::Ok();
}

Expected<Measurement> ToolMeasurer::InProcess(const EngineChoice& engine, int64_t batch) {
  bench::BenchOptions o;
  o.model_path = options_.model_path;
  o.session.provider = options_.provider;
  o.io = engine.cuda_graphs ? IoMode::kServedGraph : IoMode::kServed;
  if (options_.provider != Provider::kCpu) {
    o.session.cuda_options = EngineCudaOptions(engine);
    o.precisions = {engine.precision};
  }
  o.batches = {batch};
  o.load.warmup = options_.warmup;
  o.load.iterations = options_.iterations;
  o.check_accuracy = false;
  ORTGPU_ASSIGN_OR_RETURN(bench::BenchReport report, bench::RunBenchmark(o));
  if (report.results.empty()) return Internal("bench measured nothing for " + engine.Key());
  const bench::ConfigResult& r = report.results.front();
  if (!r.error.ok()) return r.error;
  if (r.samples_ms.empty()) return Internal("bench kept no samples for " + engine.Key());
  std::vector<double> sorted = r.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  Measurement m;
  m.latency_ms = bench::Percentile(sorted, 50);
  m.items_per_s = m.latency_ms > 0 ? static_cast<double>(batch) * 1000.0 / m.latency_ms : 0;
  return m;
}

Expected<Measurement> ToolMeasurer::Served(const ServedCandidate& candidate, double latency_budget_ms) {
  const std::string model_name = "tuned";
  const std::string repo = (fs::path(options_.scratch_dir) / "repository").string();
  std::error_code ec;
  fs::remove_all(repo, ec);
  ConfigWriterOptions writer;
  writer.max_batch_size = options_.max_batch_size;
  writer.base = options_.base;
  if (options_.provider == Provider::kCpu) writer.instance_kind = inference::ModelInstanceGroup::KIND_CPU;
  ORTGPU_RETURN_IF_ERROR(WriteModelFolder((fs::path(repo) / model_name).string(), options_.model_path,
                                          TunedConfigPbtxt(candidate, writer)));

  ChildProcess server;
  std::vector<std::string> argv = {options_.ortgpu_binary, "serve", "--model-repository", repo, "--http-port", "0",
                                   "--grpc-port", "0", "--metrics-port", "0"};
  if (options_.provider == Provider::kCpu) argv.push_back("--cpu");
  const auto started = std::chrono::steady_clock::now();
  ORTGPU_RETURN_IF_ERROR(server.Start(argv).WithContext("tune runs serve from its own binary"));
  const auto has_ports = [](const std::string& out) { return FindServePorts(out).has_value(); };
  const bool listening = server.WaitForOutput(has_ports, std::chrono::minutes(5));
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!listening) {
    server.Stop(std::chrono::seconds(10));
    return Unavailable("ortgpu serve did not start listening for " + candidate.Key() + "; its output:\n" +
                       server.output());
  }
  const ServePorts ports = *FindServePorts(server.output());
  if (options_.log) options_.log(fmt::format("serving {} on port {}", candidate.Key(), ports.http));

  perf::PerfOptions p;
  p.url = fmt::format("http://127.0.0.1:{}", ports.http);
  p.metrics_url = ports.metrics > 0 ? fmt::format("http://127.0.0.1:{}/metrics", ports.metrics) : "";
  p.model = model_name;
  p.rows = 1;
  p.concurrency = {1};
  p.latency_budget_ms = latency_budget_ms;
  p.max_concurrency = options_.max_concurrency;
  p.measure.window_ms = options_.window_ms;
  p.measure.max_trials = options_.max_trials;
  auto report = perf::RunPerf(p);
  const int exit_code = server.Stop(std::chrono::seconds(10));
  if (!report.ok()) return report.status().WithContext("perf against " + candidate.Key());
  Measurement m;
  if (report->budget && report->budget->best) {
    const perf::StepResult& best = report->steps.at(*report->budget->best);
    m.items_per_s = best.items_per_s;
    m.latency_ms = best.budget_latency_ms;
  } else if (!report->steps.empty()) {
    m.latency_ms = report->steps.front().budget_latency_ms;  // even one connection broke the budget
  }
  // The report's details (tune/report.h): perf's steps, memory, load time.
  m.load_s = load_s;
  for (const perf::StepResult& step : report->steps) {
    m.steps.push_back({step.load, step.items_per_s, step.budget_latency_ms});
    if (step.gpu) m.gpu_memory_bytes = std::max(m.gpu_memory_bytes.value_or(0), step.gpu->memory_used_bytes);
  }
  std::sort(m.steps.begin(), m.steps.end(), [](const LoadStep& a, const LoadStep& b) { return a.load < b.load; });
  if (exit_code != 0 && options_.log) options_.log(fmt::format("serve exited with {}", exit_code));
  return m;
}

}  // namespace ortgpu::tune
