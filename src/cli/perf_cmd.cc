// `ortgpu perf`: flags (one table, the source of --help) -> perf::PerfOptions
// -> perf::RunPerf -> a table, JSON or CSV on stdout and optionally an HTML
// page. Exit 0 when every request succeeded, 1 when requests failed or the
// server could not be reached, 2 on bad usage.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/cuda_setup.h"
#include "perf/multi_model.h"
#include "perf/perf.h"

namespace ortgpu::cli {
namespace {

struct PerfFlags {
  std::string url = "http://localhost:8000";
  std::string protocol = "http";
  std::string grpc_url;
  std::vector<std::string> models;  // --model NAME[:SHARE], repeatable or comma-separated
  std::string version;
  std::string metrics_url;
  int64_t batch = 1;
  std::vector<std::string> shapes;
  std::vector<std::string> int_ranges;
  std::vector<std::string> input_files;
  uint32_t seed = 1;
  bool json_tensors = false;
  std::string shared_memory = "none";
  uint64_t output_shm_bytes = 102400;
  int shm_device = 0;
  std::vector<int> concurrency;
  std::string concurrency_range;
  std::vector<double> rates;
  std::string rate_range;
  std::string distribution = "constant";
  int64_t request_count = 0;
  int connections = 64;
  int threads = 0;
  bool busy_poll = false;
  int64_t request_timeout_ms = 10000;
  int64_t interval_ms = 5000;
  double stability_percentage = 10;
  int max_trials = 10;
  double percentile = 0;  // 0: p95 for stability, p99 for the budget
  double budget_ms = 0;
  int max_concurrency = 256;
  double max_rate = 100000;
  std::string compare_model;
  std::string provider;
  bool json = false;
  bool csv = false;
  std::string html;
  bool progress = true;
};

// "START:END[:STEP]", linear steps as perf_analyzer's ranges.
Expected<std::vector<double>> ParseRange(const std::string& text, const std::string& flag) {
  std::vector<double> parts;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t colon = text.find(':', pos);
    const std::string part = text.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !(v > 0)) {
      return InvalidArgument(flag + " '" + text + "' is not START:END[:STEP] of positive numbers; e.g. " + flag + " 1:16:4");
    }
    parts.push_back(v);
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[1] < parts[0]) {
    return InvalidArgument(flag + " '" + text + "' is not START:END[:STEP] with END >= START; e.g. " + flag + " 1:16:4");
  }
  const double step = parts.size() == 3 ? parts[2] : 1;
  std::vector<double> out;
  for (double v = parts[0]; v <= parts[1] * (1 + 1e-9) && out.size() < 10000; v += step) out.push_back(v);
  return out;
}

Expected<perf::PerfOptions> ToOptions(const PerfFlags& f) {
  perf::PerfOptions o;
  o.url = f.url;
  ORTGPU_ASSIGN_OR_RETURN(o.protocol, perf::ParseProtocol(f.protocol));
  o.grpc_url = f.grpc_url;
  if (o.protocol == perf::Protocol::kGrpc && f.json_tensors) {
    return InvalidArgument("--json-tensors applies to HTTP only; gRPC always sends raw_input_contents");
  }
  o.model = f.models.size() == 1 && f.models[0].find(':') == std::string::npos ? f.models[0] : "";
  o.version = f.version;
  o.metrics_url = f.metrics_url;
  o.rows = f.batch;
  o.format = f.json_tensors ? perf::TensorFormat::kJson : perf::TensorFormat::kBinary;
  ORTGPU_ASSIGN_OR_RETURN(o.shared_memory.mode, perf::ParseSharedMemoryMode(f.shared_memory));
  if (o.shared_memory.mode != perf::SharedMemoryMode::kNone && f.json_tensors) {
    return InvalidArgument("--json-tensors and --shared-memory exclude each other: with shared memory no tensor "
                           "travels in the request");
  }
  o.shared_memory.output_bytes = f.output_shm_bytes;
  o.shared_memory.device = f.shm_device;
  for (const auto& s : f.shapes) ORTGPU_RETURN_IF_ERROR(bench::ParseShapeFlag(s, o.inputs));
  for (const auto& s : f.int_ranges) ORTGPU_RETURN_IF_ERROR(bench::ParseIntRangeFlag(s, o.inputs));
  for (const auto& s : f.input_files) ORTGPU_RETURN_IF_ERROR(bench::ParseInputFlag(s, o.inputs));
  o.inputs.seed = f.seed;
  const bool concurrency_given = !f.concurrency.empty() || !f.concurrency_range.empty();
  const bool rate_given = !f.rates.empty() || !f.rate_range.empty();
  if (concurrency_given && rate_given) {
    return InvalidArgument("--concurrency and --request-rate are two load modes; give one of them");
  }
  if (!f.concurrency.empty() && !f.concurrency_range.empty()) {
    return InvalidArgument("--concurrency and --concurrency-range both give the concurrency; give one of them");
  }
  if (!f.rates.empty() && !f.rate_range.empty()) {
    return InvalidArgument("--request-rate and --request-rate-range both give the rate; give one of them");
  }
  if (rate_given) {
    o.mode = perf::LoadMode::kRequestRate;
    if (!f.rate_range.empty()) {
      ORTGPU_ASSIGN_OR_RETURN(o.rates, ParseRange(f.rate_range, "--request-rate-range"));
    } else {
      o.rates = f.rates;
    }
  } else if (!f.concurrency_range.empty()) {
    ORTGPU_ASSIGN_OR_RETURN(std::vector<double> c, ParseRange(f.concurrency_range, "--concurrency-range"));
    o.concurrency.clear();
    for (double v : c) {
      if (v != std::floor(v)) return InvalidArgument("--concurrency-range '" + f.concurrency_range + "' must hold whole numbers");
      o.concurrency.push_back(static_cast<int>(v));
    }
  } else if (!f.concurrency.empty()) {
    o.concurrency = f.concurrency;
  }
  ORTGPU_ASSIGN_OR_RETURN(o.distribution, perf::ParseDistribution(f.distribution));
  o.rate_connections = f.connections;
  o.request_count = f.request_count;
  // One thread drives hundreds of connections of small requests, but 64
  // connections of 602 KB bodies need about 4 on the H200 (docs/PERF.md).
  o.threads = f.threads > 0 ? f.threads
                            : static_cast<int>(std::clamp(std::thread::hardware_concurrency() / 4, 1u, 4u));
  o.busy_poll = f.busy_poll;
  o.request_timeout = std::chrono::milliseconds(f.request_timeout_ms);
  o.measure.window_ms = f.interval_ms;
  o.measure.stability = f.stability_percentage / 100;
  o.measure.max_trials = f.max_trials;
  if (f.max_trials < o.measure.stable_windows) {
    return InvalidArgument("--max-trials " + std::to_string(f.max_trials) + " is less than the " +
                           std::to_string(o.measure.stable_windows) + " windows the stability check compares");
  }
  if (f.percentile > 0) {
    o.measure.percentile = f.percentile;
    o.budget_percentile = f.percentile;
  }
  if (f.budget_ms > 0) {
    o.latency_budget_ms = f.budget_ms;
    o.goodput_budget_ms = f.budget_ms;
  }
  o.max_concurrency = f.max_concurrency;
  o.max_rate = f.max_rate;
  o.compare_model = f.compare_model;
  if (!f.provider.empty()) {
    ORTGPU_ASSIGN_OR_RETURN(o.compare_provider, ParseProvider(f.provider));
  } else if (!f.compare_model.empty()) {
    o.compare_provider = ProbeGpus().names.empty() ? Provider::kCpu : Provider::kCuda;
  }
  return o;
}

// Several models at once (perf/multi_model.h): a table or JSON per step and model.
int RunMultiModel(const PerfFlags& flags, const perf::PerfOptions& options, const perf::PerfHooks& hooks) {
  std::vector<perf::ModelShare> models;
  for (const auto& text : flags.models) {
    auto m = perf::ParseModelShare(text);
    if (!m.ok()) {
      std::fprintf(stderr, "ortgpu perf: %s\n", m.status().message().c_str());
      return 2;
    }
    models.push_back(*m);
  }
  if (flags.csv || !flags.html.empty()) {
    std::fprintf(stderr, "ortgpu perf: --csv and --html report one model; with several --model use the table or --json\n");
    return 2;
  }
  auto report = perf::RunMultiPerf(options, models, hooks);
  if (hooks.progress) std::fprintf(stderr, "\r%100s\r", "");
  if (!report.ok()) {
    std::fprintf(stderr, "ortgpu perf: %s\n", report.status().message().c_str());
    return ExitCodeFor(report.status().code()) == 2 ? 2 : 1;
  }
  std::fputs((flags.json ? perf::RenderMultiJson(*report) : perf::RenderMultiTable(*report)).c_str(), stdout);
  if (!report->ok()) {
    std::fprintf(stderr, "ortgpu perf: requests failed or a model did not run (see above)\n");
    return 1;
  }
  return 0;
}

int RunPerfCommand(const PerfFlags& flags) {
  auto options = ToOptions(flags);
  if (!options.ok()) {
    std::fprintf(stderr, "ortgpu perf: %s\n", options.status().message().c_str());
    return ExitCodeFor(options.status().code());
  }
  perf::PerfHooks hooks;
  if (::isatty(STDERR_FILENO) && flags.progress) {
    hooks.progress = [](const std::string& line) {
      std::fprintf(stderr, "\r%-100.100s", line.c_str());
      std::fflush(stderr);
    };
    hooks.on_compare = [] { std::fprintf(stderr, "\r%100s\rin-process benchmark...", ""); };
  }
  if (options->model.empty()) return RunMultiModel(flags, *options, hooks);
  auto report = perf::RunPerf(*options, hooks);
  if (hooks.progress) std::fprintf(stderr, "\r%100s\r", "");
  if (!report.ok()) {
    std::fprintf(stderr, "ortgpu perf: %s\n", report.status().message().c_str());
    return ExitCodeFor(report.status().code()) == 2 ? 2 : 1;
  }
  if (flags.json) {
    std::fputs(perf::RenderJson(*report).c_str(), stdout);
  } else if (flags.csv) {
    std::fputs(perf::RenderCsv(*report).c_str(), stdout);
  } else {
    std::fputs(perf::RenderTable(*report).c_str(), stdout);
  }
  if (!flags.html.empty()) {
    if (Status st = WriteOutputFile(flags.html, perf::RenderHtml(*report), "HTML report"); !st.ok()) {
      std::fprintf(stderr, "ortgpu perf: %s\n", st.message().c_str());
      return 1;
    }
  }
  if (!report->ok()) {
    for (const auto& s : report->steps) {
      if (s.failed || s.error_count() > 0) {
        std::fprintf(stderr, "ortgpu perf: %s: %s%s\n", perf::StepLabel(*report, s).c_str(),
                     s.errors.empty() ? "" : ("requests failed: " + perf::DescribeErrors(s.errors)).c_str(),
                     s.note.empty() ? "" : ((s.errors.empty() ? "" : "; ") + s.note).c_str());
      }
    }
    return 1;
  }
  return 0;
}

}  // namespace

void AddPerfCommand(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<PerfFlags>();
  CLI::App* cmd = app.add_subcommand(
      "perf",
      "Load-test any KServe v2 server (ortgpu serve, Triton) as perf_analyzer does: a concurrency sweep or request rates, "
      "stable measurement windows, client-side percentiles, the server-side split from the statistics extension, GPU "
      "figures from its metrics, the highest throughput within a latency budget, and the served throughput against "
      "ortgpu bench in this process. Exit 0 when every request succeeded, 1 when requests failed, 2 on bad usage.");
  cmd->add_option("--url", f->url,
                  "The server's HTTP endpoint (model metadata and statistics; infer requests too with -i http)")
      ->default_val("http://localhost:8000");
  cmd->add_option("-i,--protocol", f->protocol,
                  "How infer requests travel: http (KServe v2 REST, binary tensors) or grpc (inference."
                  "GRPCInferenceService/ModelInfer with raw_input_contents)")
      ->check(CLI::IsMember({"http", "grpc"}))
      ->default_val("http");
  cmd->add_option("--grpc-url", f->grpc_url,
                  "HOST:PORT of the server's gRPC endpoint with -i grpc (default: --url's host, port 8001)");
  cmd->add_option("--model,-m", f->models,
                  "The served model's name; several (repeated, or NAME:SHARE,NAME:SHARE) load them together, each "
                  "with its share of every step (shares are weights; default 1 each), reported per model "
                  "(docs/MEMORY.md)")
      ->delimiter(',')
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("--model-version", f->version, "The model version (default: the server's latest)");
  cmd->add_option("--metrics-url", f->metrics_url,
                  "Prometheus metrics for GPU utilisation and memory (default http://HOST:8002/metrics; 'off' for none)");
  cmd->add_option("--batch,-b", f->batch, "Rows per request (the batch dim of a batching model)")->check(CLI::PositiveNumber)->default_val(1);
  cmd->add_option("--shape", f->shapes, "NAME:DIMS for input NAME or a symbolic dim (sequence:128); repeatable")->allow_extra_args(false);
  cmd->add_option("--int-range", f->int_ranges, "NAME:LO:HI, integer input values in [LO,HI); repeatable")->allow_extra_args(false);
  cmd->add_option("--input", f->input_files, "NAME=FILE, real data from a .npy or ONNX TensorProto .pb file; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--seed", f->seed, "Seed of the generated inputs and of Poisson arrivals")->default_val(1);
  cmd->add_flag("--json-tensors", f->json_tensors, "Send and receive tensors as JSON instead of binary tensor data");
  cmd->add_option("--shared-memory", f->shared_memory,
                  "none, system or cuda: put the inputs and outputs in shared memory registered with the server "
                  "(on the same machine) instead of the requests, as perf_analyzer's flag")
      ->default_val("none");
  cmd->add_option("--output-shared-memory-size", f->output_shm_bytes,
                  "With --shared-memory: bytes of the region for each output")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->default_val(102400);
  cmd->add_option("--shared-memory-device", f->shm_device, "With --shared-memory cuda: the GPU the regions live on")
      ->check(CLI::Range(0, 1024))
      ->default_val(0);
  cmd->add_option("--concurrency", f->concurrency, "Requests outstanding, comma-separated steps (1,4,16,64); default 1")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->allow_extra_args(false);
  cmd->add_option("--concurrency-range", f->concurrency_range, "START:END[:STEP] concurrency steps (1:8:1)");
  cmd->add_option("--request-rate", f->rates, "Requests per second, comma-separated steps (100,200): the open-loop rate mode")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->allow_extra_args(false);
  cmd->add_option("--request-rate-range", f->rate_range, "START:END[:STEP] request-rate steps (100:400:100)");
  cmd->add_option("--request-distribution", f->distribution, "Arrivals in the rate mode: constant or poisson")
      ->check(CLI::IsMember({"constant", "poisson"}))
      ->default_val("constant");
  cmd->add_option("--connections", f->connections, "Rate mode: connections kept open to send on")->check(CLI::PositiveNumber)->default_val(64);
  cmd->add_option("--request-count", f->request_count, "Send exactly this many requests per step (no windows, no stability check)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", f->threads,
                  "Client I/O threads; 0: a quarter of the cores, 1 to 4 (one drives hundreds of connections of "
                  "small requests; large bodies need more). -i grpc: one per request up to 16, else gRPC's own threads")
      ->check(CLI::NonNegativeNumber)
      ->default_val(0);
  cmd->add_flag("--busy-poll", f->busy_poll,
                "The client's I/O threads poll for responses without sleeping, a core each (as trtexec's "
                "--useSpinWait): no wake-up in the latency; pair with serve --busy-poll-us (-i grpc: up to 16 requests)");
  cmd->add_option("--request-timeout-ms", f->request_timeout_ms, "A request unanswered this long counts as a timeout")
      ->check(CLI::PositiveNumber)
      ->default_val(10000);
  cmd->add_option("--measurement-interval,-p", f->interval_ms, "Window length in milliseconds")->check(CLI::PositiveNumber)->default_val(5000);
  cmd->add_option("--stability-percentage,-s", f->stability_percentage,
                  "Windows agree when each is within this percent of their mean (throughput and latency)")
      ->check(CLI::PositiveNumber)
      ->default_val(10);
  cmd->add_option("--max-trials,-r", f->max_trials, "Windows per step before it is reported unstable")->check(CLI::PositiveNumber)->default_val(10);
  cmd->add_option("--percentile", f->percentile,
                  "The latency percentile of the stability check and the budget (default p95 and p99)")
      ->check(CLI::Range(1.0, 99.9));
  cmd->add_option("--latency-budget-ms", f->budget_ms,
                  "Search the concurrency (or rate) for the highest throughput whose p99 stays within this; each step's "
                  "goodput counts the requests within it. With several --model: the goodput threshold only (no search)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-concurrency", f->max_concurrency, "Budget search: the largest concurrency tried")->check(CLI::PositiveNumber)->default_val(256);
  cmd->add_option("--max-request-rate", f->max_rate, "Budget search: the largest rate tried")->check(CLI::PositiveNumber)->default_val(100000);
  cmd->add_option("--compare-in-process", f->compare_model,
                  "Also run ortgpu bench on this ONNX file here as serve runs the model (the EP options of the served "
                  "config, serve's I/O with its CUDA graphs if used, the batch size the server ran, the request's "
                  "shapes), print what was compared and the ratio")
      ->check(CLI::ExistingFile);
  cmd->add_option("--provider", f->provider, "With --compare-in-process, when the served config names no instance kind: cpu, cuda, tensorrt "
                  "(default cuda when a GPU is found)")
      ->check(CLI::IsMember({"cpu", "cuda", "tensorrt", "trt"}));
  cmd->add_flag("--json", f->json, "Print one JSON document instead of the table");
  cmd->add_flag("--csv", f->csv, "Print CSV instead of the table");
  cmd->add_option("--html", f->html, "Write a self-contained HTML report to FILE");
  cmd->add_flag("!--no-progress", f->progress, "No progress line on a terminal");
  cmd->callback([f, &result]() { result.exit_code = RunPerfCommand(*f); });
}

}  // namespace ortgpu::cli
