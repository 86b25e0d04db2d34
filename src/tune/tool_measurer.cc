#include "tune/tool_measurer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <system_error>

#include <fmt/format.h>

#include "bench/benchmark.h"
#include "bench/prepared_model.h"
#include "bench/statistics.h"
#include "onnx.pb.h"
#include "ort/session.h"
#include "precision/model_file.h"
#include "sys/child_process.h"
#include "tune/config_writer.h"
#include "tune/goodput_search.h"

namespace ortgpu::tune {
namespace fs = std::filesystem;
namespace {

// The ports serve's start-up summary names ("HTTP: http://HOST:PORT",
// "metrics: http://HOST:PORT/metrics" or "metrics: off", "gRPC: HOST:PORT").
struct ServePorts {
  int http = 0;
  int metrics = 0;  // 0: off
  int grpc = 0;     // 0: not printed
};

std::optional<ServePorts> FindServePorts(const std::string& output) {
  static const std::regex kHttpLine(R"(HTTP: http://[^\s]+:(\d+)\n)");
  static const std::regex kMetricsLine(R"(metrics: (?:http://[^\s]+:(\d+)/metrics|off)\n)");
  static const std::regex kGrpcLine(R"(gRPC: [^\s]+:(\d+)\n)");
  std::smatch http;
  std::smatch metrics;
  std::smatch grpc;
  if (!std::regex_search(output, http, kHttpLine) || !std::regex_search(output, metrics, kMetricsLine)) return std::nullopt;
  ServePorts p{std::stoi(http[1].str()), metrics[1].matched ? std::stoi(metrics[1].str()) : 0, 0};
  if (std::regex_search(output, grpc, kGrpcLine)) p.grpc = std::stoi(grpc[1].str());
  return p;
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string out;
  for (int64_t d : dims) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}

}  // namespace

double MedianRelativeNoise(std::vector<double> samples) {
  if (samples.size() < 2) return 0;
  std::sort(samples.begin(), samples.end());
  const double median = bench::Percentile(samples, 50);
  if (median <= 0) return 0;
  std::vector<double> deviations;
  for (double s : samples) deviations.push_back(std::abs(s - median));
  std::sort(deviations.begin(), deviations.end());
  const double mad = bench::Percentile(deviations, 50);
  // The standard error of a median is about 1.253 sigma / sqrt(n); sigma
  // from the MAD (1.4826 MAD for normal noise), robust to the GPU's outliers.
  const double se = 1.253 * 1.4826 * mad / std::sqrt(static_cast<double>(samples.size()));
  return 1.96 * se / median;
}

std::map<std::string, std::string> EngineCudaOptions(const EngineChoice& engine) {
  std::map<std::string, std::string> out;
  if (engine.prefer_nhwc) out["prefer_nhwc"] = "1";
  if (engine.conv_search != EngineChoice().conv_search) {
    out["cudnn_conv_algo_search"] = std::string(ConvAlgoSearchName(engine.conv_search));
  }
  if (engine.fuse_conv_bias) out["fuse_conv_bias"] = "1";
  if (engine.precision == Precision::kFp32) out["use_tf32"] = "0";
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

// bench's ModelPreparer over the model read once, on the inputs the
// precision is judged on.
struct ToolMeasurer::Converter {
  std::optional<bench::ModelPreparer> preparer;
};

ToolMeasurer::ToolMeasurer(ToolMeasurerOptions options)
    : options_(std::move(options)), converter_(std::make_unique<Converter>()) {}

ToolMeasurer::~ToolMeasurer() = default;

Expected<PrecisionVerdict> ToolMeasurer::JudgePrecision(Precision precision) {
  if (!bench::IsConverted(precision)) return InvalidArgument("only fp16 and mixed are converted and judged");
  if (!converter_->preparer) {
    ORTGPU_ASSIGN_OR_RETURN(::onnx::ModelProto fp32, precision::ReadModelFile(options_.model_path));
    SessionOptions cpu;
    cpu.provider = Provider::kCpu;
    ORTGPU_ASSIGN_OR_RETURN(auto session, Session::Load(options_.model_path, cpu));
    const int64_t batch = options_.max_batch_size > 0 ? std::min(options_.judge_batch, options_.max_batch_size) : 1;
    ORTGPU_ASSIGN_OR_RETURN(std::vector<Tensor> inputs,
                            bench::MakeInputs(session->inputs(), options_.inputs, bench::HasDynamicBatch(session->inputs()) ? batch : 1));
    bench::PrepareOptions po;
    po.session.provider = options_.provider;
    po.budget = options_.budget;
    po.check_accuracy = true;
    converter_->preparer.emplace(std::move(fp32), std::move(inputs), po);
  }
  ORTGPU_ASSIGN_OR_RETURN(bench::PreparedModel prepared, converter_->preparer->Prepare(precision));
  const bench::PrecisionAccuracy& a = prepared.accuracy;
  PrecisionVerdict v;
  v.within_budget = a.checked && a.within_budget;
  v.min_cosine = a.min_cosine;
  v.max_rel_error = a.max_rel_error;
  v.top1 = a.top1_agreement;
  for (const std::string& line : a.violations) v.detail += (v.detail.empty() ? "" : "; ") + line;
  if (v.detail.empty()) v.detail = prepared.summary.empty() ? a.note : prepared.summary;
  converted_[precision] = std::move(prepared.model_bytes);
  return v;
}

Expected<std::string> ToolMeasurer::ModelBytes(Precision precision) {
  if (!bench::IsConverted(precision)) return std::string();
  if (converted_.count(precision) == 0) {
    // A rerun whose history holds the verdict still needs the model.
    ORTGPU_ASSIGN_OR_RETURN(PrecisionVerdict ignored, JudgePrecision(precision));
    (void)ignored;
  }
  return converted_.at(precision);
}

Expected<std::vector<Expected<Measurement>>> ToolMeasurer::Bench(const EngineChoice& engine,
                                                                 const std::vector<int64_t>& batches) {
  bench::BenchOptions o;
  o.model_path = options_.model_path;
  ORTGPU_ASSIGN_OR_RETURN(o.model_bytes, ModelBytes(engine.precision));
  o.session.provider = options_.provider;
  o.io = engine.cuda_graphs ? IoMode::kServedGraph : IoMode::kServed;
  if (options_.provider != Provider::kCpu) o.session.cuda_options = EngineCudaOptions(engine);
  o.batches = batches;
  o.inputs = options_.inputs;
  o.load.warmup = options_.warmup;
  o.load.iterations = options_.iterations;
  o.check_accuracy = false;
  ORTGPU_ASSIGN_OR_RETURN(bench::BenchReport report, bench::RunBenchmark(o));
  std::vector<Expected<Measurement>> out;
  for (int64_t batch : batches) {
    auto r = std::find_if(report.results.begin(), report.results.end(),
                          [&](const bench::ConfigResult& c) { return c.config.batch == batch; });
    if (r == report.results.end()) {
      out.push_back(Internal(fmt::format("bench measured nothing for {} at batch {}", engine.Key(), batch)));
    } else if (!r->error.ok()) {
      out.push_back(r->error);
    } else if (r->samples_ms.empty()) {
      out.push_back(Internal("bench kept no samples for " + engine.Key()));
    } else {
      std::vector<double> sorted = r->samples_ms;
      std::sort(sorted.begin(), sorted.end());
      Measurement m;
      m.latency_ms = bench::Percentile(sorted, 50);
      m.items_per_s = m.latency_ms > 0 ? static_cast<double>(batch) * 1000.0 / m.latency_ms : 0;
      m.rel_noise = MedianRelativeNoise(r->samples_ms);
      out.push_back(m);
    }
  }
  return out;
}

std::vector<Expected<Measurement>> ToolMeasurer::InProcess(const EngineChoice& engine,
                                                           const std::vector<int64_t>& batches) {
  auto all = Bench(engine, batches);
  if (all.ok()) return *std::move(all);
  if (batches.size() == 1) return {all.status()};
  // One batch failed (out of memory at the largest, say): each alone, so
  // the others still count.
  std::vector<Expected<Measurement>> out;
  for (int64_t b : batches) {
    auto one = Bench(engine, {b});
    out.push_back(one.ok() ? std::move(one->front()) : Expected<Measurement>(one.status()));
  }
  return out;
}

Expected<Measurement> ToolMeasurer::Served(const ServedCandidate& candidate, const ServedLoad& load) {
  const std::string model_name = "tuned";
  const std::string repo = (fs::path(options_.scratch_dir) / "repository").string();
  std::error_code ec;
  fs::remove_all(repo, ec);
  ConfigWriterOptions writer;
  writer.max_batch_size = options_.max_batch_size;
  writer.precision_budget = options_.budget_parameter;
  writer.base = options_.base;
  if (options_.provider == Provider::kCpu) writer.instance_kind = inference::ModelInstanceGroup::KIND_CPU;
  ORTGPU_RETURN_IF_ERROR(WriteModelFolder((fs::path(repo) / model_name).string(), options_.model_path,
                                          TunedConfigPbtxt(candidate, writer)));

  ChildProcess server;
  std::vector<std::string> argv = {options_.ortgpu_binary, "serve", "--model-repository", repo, "--http-port", "0",
                                   "--grpc-port", "0", "--metrics-port", "0"};
  if (options_.provider == Provider::kCpu) argv.push_back("--cpu");
  for (const auto& [name, dims] : options_.served_shapes) {
    argv.push_back("--warmup-shape");
    argv.push_back(name + ":" + ShapeText(dims));
  }
  const auto started = std::chrono::steady_clock::now();
  ORTGPU_RETURN_IF_ERROR(server.Start(argv).WithContext("tune runs serve from its own binary"));
  const auto has_ports = [](const std::string& out) { return FindServePorts(out).has_value(); };
  const bool listening = server.WaitForOutput(has_ports, std::chrono::seconds(options_.load_timeout_s));
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!listening) {
    server.Stop(std::chrono::seconds(10));
    return Unavailable(fmt::format("ortgpu serve did not start listening for {} within {} s; its output:\n{}",
                                   candidate.Key(), options_.load_timeout_s, server.output()));
  }
  const ServePorts ports = *FindServePorts(server.output());
  if (options_.log) options_.log(fmt::format("serving {} on port {} (loaded in {:.1f} s)", candidate.Key(), ports.http, load_s));

  perf::PerfOptions p;
  p.url = fmt::format("http://127.0.0.1:{}", ports.http);
  p.protocol = options_.protocol;
  if (ports.grpc > 0) p.grpc_url = fmt::format("127.0.0.1:{}", ports.grpc);
  p.metrics_url = ports.metrics > 0 ? fmt::format("http://127.0.0.1:{}/metrics", ports.metrics) : "";
  p.model = model_name;
  p.rows = 1;
  p.threads = options_.perf_threads;
  p.inputs = options_.inputs;
  p.inputs.shapes = options_.served_shapes;
  Measurement first;
  first.load_s = load_s;
  // One budget search on this start; `m` takes its figures.
  auto search = [&](Measurement& m, int start) -> Status {
    auto step = [&](int concurrency, bool full) -> Expected<GoodputStep> {
      perf::PerfOptions one = p;
      one.concurrency = {concurrency};
      one.measure = full ? options_.full_step : options_.quick_step;
      ORTGPU_ASSIGN_OR_RETURN(perf::PerfReport report, perf::RunPerf(one));
      if (report.steps.empty()) return Internal(fmt::format("perf measured no step at {} connections", concurrency));
      const perf::StepResult& s = report.steps.front();
      GoodputStep g{.concurrency = concurrency, .items_per_s = s.items_per_s, .p99_ms = s.budget_latency_ms,
                    .errors = s.error_count(), .failed = s.failed};
      m.errors += g.errors;
      if (s.gpu) m.gpu_memory_bytes = std::max(m.gpu_memory_bytes.value_or(0), s.gpu->memory_used_bytes);
      return g;
    };
    GoodputSearchOptions so;
    so.budget_ms = load.latency_budget_ms;
    so.start = start;
    so.max = options_.max_concurrency;
    so.precision = options_.load_precision;
    auto searched = SearchGoodput(so, step);
    if (!searched.ok()) return searched.status().WithContext("perf against " + candidate.Key());
    // One step per load, in load order; a full step's figures over a short one's.
    std::map<int, LoadStep> by_load;
    for (const GoodputStep& s : searched->steps) {
      if (s.full || by_load.count(s.concurrency) == 0) {
        by_load[s.concurrency] = {static_cast<double>(s.concurrency), s.items_per_s, s.p99_ms};
      }
    }
    for (const auto& [load_connections, s] : by_load) m.steps.push_back(s);
    m.note = searched->note;
    if (searched->best) {
      m.items_per_s = searched->best->items_per_s;
      m.latency_ms = searched->best->p99_ms;
      m.concurrency = searched->best->concurrency;
    } else if (!searched->steps.empty()) {
      m.latency_ms = searched->steps.front().p99_ms;  // even the fewest connections broke the budget
    }
    return {};
  };
  Status status = search(first, load.start_concurrency);
  // The repeats on the same start, while the first is a likely leader; a
  // failed repeat ends them and keeps what was measured.
  int start = std::max(1, first.concurrency / 2);
  for (int i = 1; status.ok() && i < load.searches && first.items_per_s > 0 && first.items_per_s >= load.again_above;
       ++i) {
    Measurement again;
    again.load_s = load_s;
    if (Status s = search(again, start); !s.ok()) {
      if (options_.log) options_.log(fmt::format("a repeat on the same start failed: {}", s.message()));
      break;
    }
    if (options_.log) {
      options_.log(fmt::format("{} repeat {} on the same start: {:.1f} items/s", candidate.Key(), i, again.items_per_s));
    }
    start = std::max(1, again.concurrency / 2);
    first.again.push_back(std::move(again));
  }
  const int exit_code = server.Stop(std::chrono::seconds(10));
  if (!status.ok()) return status;
  Measurement m = std::move(first);
  if (exit_code != 0 && options_.log) options_.log(fmt::format("serve exited with {}", exit_code));
  return m;
}

}  // namespace ortgpu::tune
