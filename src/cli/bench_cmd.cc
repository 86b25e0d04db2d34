// `ortgpu bench`: flags (one table, the source of --help), then
// bench::RunBenchmark, then a table, JSON or CSV on stdout and optionally an
// HTML page and a config.pbtxt fragment. Errors: one line, non-zero exit.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/benchmark.h"
#include "bench/devices.h"
#include "bench/report.h"
#include "bench/sweep.h"
#include "cli/commands.h"
#include "gpu/cuda_driver.h"
#include "serve/repository/instance_placement.h"
#include "sys/environment.h"

namespace ortgpu::cli {
namespace {

struct BenchFlags {
  std::string model;
  std::string provider = "cpu";
  std::vector<std::string> cuda_options;
  std::string device;  // "", "N" or "all"
  std::string opt = "all";
  std::string save_optimized;
  int intra_threads = 0;
  int inter_threads = 0;
  std::string execution_mode = "sequential";
  std::string io = "host";
  int64_t request_rows = 0;
  std::vector<int64_t> batches;
  std::vector<int> concurrency = {1};
  std::string concurrency_mode = "shared";
  int64_t iterations = 200;
  double duration_s = 0;
  int warmup = 10;
  std::vector<std::string> shapes;
  std::vector<std::string> int_ranges;
  std::vector<std::string> input_files;
  uint32_t seed = 1;
  bool no_check = false;
  double atol = 1e-3;
  double rtol = 5e-2;
  std::vector<std::string> precisions;
  std::string budget;
  bool sweep = false;
  std::vector<std::string> sweep_axes;
  bool memory = false;
  bool json = false;
  bool csv = false;
  bool samples = false;
  std::string html;
  std::string config_out;
  bool progress = true;
};

Expected<bench::BenchOptions> ToOptions(const BenchFlags& f) {
  bench::BenchOptions o;
  o.model_path = f.model;
  ORTGPU_ASSIGN_OR_RETURN(o.session.provider, ParseProvider(f.provider));
  for (const auto& kv : f.cuda_options) ORTGPU_RETURN_IF_ERROR(ParseKeyValue(kv, o.session.cuda_options).WithContext("--cuda-option"));
  if (!o.session.cuda_options.empty() && o.session.provider == Provider::kCpu) {
    return InvalidArgument("--cuda-option needs --provider cuda (the CPU provider takes no CUDA options)");
  }
  ORTGPU_RETURN_IF_ERROR(ValidateCudaOptions(o.session.cuda_options));
  ORTGPU_ASSIGN_OR_RETURN(o.session.optimization, ParseOptimizationLevel(f.opt));
  o.session.optimized_model_path = f.save_optimized;
  o.session.intra_op_threads = f.intra_threads;
  o.session.inter_op_threads = f.inter_threads;
  o.session.execution_mode = f.execution_mode == "parallel" ? ExecutionMode::kParallel : ExecutionMode::kSequential;
  ORTGPU_ASSIGN_OR_RETURN(o.io, ParseIoMode(f.io));
  if (NeedsCudaGraphOption(o.io) && o.session.provider == Provider::kCpu) {
    return InvalidArgument("--io " + std::string(IoModeName(o.io)) +
                           " needs --provider cuda: I/O binding to the device and CUDA graphs need a GPU provider");
  }
  o.request_rows = f.request_rows;
  if (o.request_rows > 0 && o.io != IoMode::kServed && !f.sweep) {
    return InvalidArgument("--request-rows needs --io served: it joins each batch from separate requests as serve's "
                           "worker does (with --sweep it applies to the served variants)");
  }
  o.batches = f.batches;
  o.concurrency = f.concurrency;
  ORTGPU_ASSIGN_OR_RETURN(o.concurrency_mode, bench::ParseConcurrencyMode(f.concurrency_mode));
  o.load.iterations = f.iterations;
  o.load.duration_s = f.duration_s;
  o.load.warmup = f.warmup;
  for (const auto& s : f.shapes) ORTGPU_RETURN_IF_ERROR(bench::ParseShapeFlag(s, o.inputs));
  for (const auto& s : f.int_ranges) ORTGPU_RETURN_IF_ERROR(bench::ParseIntRangeFlag(s, o.inputs));
  for (const auto& s : f.input_files) ORTGPU_RETURN_IF_ERROR(bench::ParseInputFlag(s, o.inputs));
  o.inputs.seed = f.seed;
  o.check_accuracy = !f.no_check;
  o.tolerance = {f.atol, f.rtol};
  for (const auto& p : f.precisions) {
    ORTGPU_ASSIGN_OR_RETURN(auto precision, bench::ParsePrecision(p));
    o.precisions.push_back(precision);
  }
  ORTGPU_ASSIGN_OR_RETURN(o.budget, ParsePrecisionBudget(f.budget));
  o.sweep = f.sweep;
  o.sweep_axes = f.sweep_axes;
  o.memory = f.memory;
  return o;
}

// --device N|all: the GPUs to run on (CUDA ordinals with their names), or
// an error that says what is visible. Sets nothing when --device is unset.
Expected<std::vector<std::pair<int, std::string>>> DeviceList(const BenchFlags& f, const bench::BenchOptions& o) {
  if (f.device.empty()) return std::vector<std::pair<int, std::string>>{};
  if (o.session.provider == Provider::kCpu) return InvalidArgument("--device needs --provider cuda");
  if (o.session.cuda_options.count("device_id")) {
    return InvalidArgument("give the GPU once: --device " + f.device + " or --cuda-option device_id, not both");
  }
  ORTGPU_ASSIGN_OR_RETURN(std::optional<int> asked, ParseDeviceFlag(f.device));
  const int one = asked.value_or(-1);
  auto driver = gpu::NewCudaDriver();
  ORTGPU_ASSIGN_OR_RETURN(serve::VisibleGpus visible, serve::ProbeVisibleGpus(*driver, RealEnvironment()));
  if (visible.count() == 0) {
    return Unavailable("--device " + f.device + ": " + visible.DescribeCount() + "; `ortgpu doctor` says why");
  }
  if (one >= 0) ORTGPU_RETURN_IF_ERROR(CheckDeviceVisible(f.device, one, visible));
  std::vector<std::pair<int, std::string>> gpus;
  for (int gpu = 0; gpu < visible.count(); ++gpu) {
    if (one < 0 || gpu == one) gpus.emplace_back(gpu, visible.names[gpu]);
  }
  return gpus;
}

// --device all: the benchmark on each GPU, each report, then the comparison.
int RunOnEveryDevice(const BenchFlags& flags, const bench::BenchOptions& options,
                     const std::vector<std::pair<int, std::string>>& gpus, const bench::BenchHooks& hooks) {
  if (!flags.html.empty() || !flags.config_out.empty() || flags.csv) {
    std::fprintf(stderr, "ortgpu bench: --device all writes a table or --json; for --html, --csv or --config-out "
                         "give one GPU (--device N)\n");
    return 2;
  }
  auto runs = bench::RunOnDevices(options, gpus, [&hooks](const bench::BenchOptions& o) {
    return bench::RunBenchmark(o, hooks);
  });
  const bench::DeviceComparison comparison = bench::CompareDevices(runs);
  if (flags.json) {
    std::fputs(bench::RenderDevicesJson(comparison, runs).c_str(), stdout);
  } else {
    for (const auto& r : runs) {
      std::printf("== GPU %d%s ==\n", r.gpu, r.name.empty() ? "" : (" (" + r.name + ")").c_str());
      if (!r.error.ok()) {
        std::printf("not measured: %s\n\n", r.error.message().c_str());
        continue;
      }
      std::fputs(bench::RenderTable(r.report).c_str(), stdout);
      std::fputs("\n", stdout);
    }
    std::fputs(bench::RenderDeviceComparison(comparison).c_str(), stdout);
  }
  int code = 0;
  for (const auto& r : runs) {
    if (!r.error.ok()) {
      std::fprintf(stderr, "ortgpu bench: GPU %d: %s\n", r.gpu, r.error.message().c_str());
      code = 1;
    } else if (!r.report.ok()) {
      code = 1;
    }
  }
  return code;
}

int RunBenchCommand(const BenchFlags& flags) {
  auto options = ToOptions(flags);
  if (!options.ok()) {
    std::fprintf(stderr, "ortgpu bench: %s\n", options.status().message().c_str());
    return ExitCodeFor(options.status().code());
  }
  auto gpus = DeviceList(flags, *options);
  if (!gpus.ok()) {
    std::fprintf(stderr, "ortgpu bench: %s\n", gpus.status().message().c_str());
    return ExitCodeFor(gpus.status().code());
  }
  if (flags.device != "all" && !gpus->empty()) {
    options->session.cuda_options["device_id"] = std::to_string(gpus->front().first);
  }
  bench::BenchHooks hooks;
  const bool tty = ::isatty(STDERR_FILENO) && flags.progress;
  std::string current;
  if (tty) {
    hooks.on_config = [&current](const std::string& label, size_t index, size_t total) {
      current = "[" + std::to_string(index) + "/" + std::to_string(total) + "] " + label;
    };
    hooks.progress = [&current](double fraction) {
      const int width = 30;
      const int filled = static_cast<int>(fraction * width);
      std::fprintf(stderr, "\r%-60.60s [%s%s] %3.0f%%", current.c_str(), std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), fraction * 100);
      if (fraction >= 1.0) std::fprintf(stderr, "\r%100s\r", "");
      std::fflush(stderr);
    };
  }
  if (flags.device == "all") return RunOnEveryDevice(flags, *options, *gpus, hooks);
  auto report = bench::RunBenchmark(*options, hooks);
  if (!report.ok()) {
    std::fprintf(stderr, "ortgpu bench: %s\n", report.status().message().c_str());
    return ExitCodeFor(report.status().code());
  }
  if (flags.json) {
    bench::JsonOptions jo;
    jo.with_samples = flags.samples;
    std::fputs(bench::RenderJson(*report, jo).c_str(), stdout);
  } else if (flags.csv) {
    std::fputs(bench::RenderCsv(*report).c_str(), stdout);
  } else {
    std::fputs(bench::RenderTable(*report).c_str(), stdout);
  }
  if (!flags.html.empty()) {
    Status st = WriteOutputFile(flags.html, bench::RenderHtml(*report), "HTML report");
    if (!st.ok()) {
      std::fprintf(stderr, "ortgpu bench: %s\n", st.message().c_str());
      return ExitCodeFor(st.code());
    }
  }
  if (!flags.config_out.empty()) {
    if (!report->recommendation || report->recommendation->config_pbtxt.empty()) {
      std::fprintf(stderr, "ortgpu bench: --config-out needs --sweep with at least one configuration that succeeded "
                           "in an I/O mode serve runs (io=served or served-graph: add one to --sweep-axes, or use --io "
                           "served)\n");
      return 2;
    }
    Status st = WriteOutputFile(flags.config_out, report->recommendation->config_pbtxt, "config.pbtxt fragment");
    if (!st.ok()) {
      std::fprintf(stderr, "ortgpu bench: %s\n", st.message().c_str());
      return ExitCodeFor(st.code());
    }
  }
  if (!report->ok()) {
    for (const auto& r : report->results) {
      if (r.accuracy.checked && !r.accuracy.passed) {
        std::fprintf(stderr, "ortgpu bench: %s batch %d gives outputs different from the CPU reference: %s\n",
                     r.config.variant.name.c_str(), static_cast<int>(r.config.batch), r.accuracy.note.c_str());
      } else if (!r.error.ok()) {
        std::fprintf(stderr, "ortgpu bench: %s batch %d failed: %s\n", r.config.variant.name.c_str(),
                     static_cast<int>(r.config.batch), r.error.message().c_str());
      }
    }
    return 1;
  }
  return 0;
}

std::string AxesHelp() {
  std::string s = "With --sweep: axes to sweep, KEY or KEY=v1|v2, comma-separated; default io,opt (CPU) or "
                  "io,prefer_nhwc,cudnn_conv_algo_search (CUDA). Axes:";
  for (const auto& a : bench::SweepAxes()) {
    std::string values;
    for (const auto& v : a.values) values += (values.empty() ? "" : "|") + v;
    s += " " + a.key + " (" + values + ")";
  }
  return s;
}

}  // namespace

void AddBenchCommand(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Measure a model as onnxruntime_perf_test and trtexec do: latency percentiles, throughput, memory, accuracy "
      "against the CPU; compare settings side by side (--sweep) and recommend the best. Exit 0 when every "
      "configuration ran and matched the CPU reference, 1 otherwise, 2 on bad usage.");
  cmd->add_option("model", f->model, "The ONNX model file")->required();
  cmd->add_option("--provider", f->provider, "Execution provider: cpu, cuda, tensorrt")
      ->check(CLI::IsMember({"cpu", "cuda", "tensorrt", "trt"}))
      ->default_val("cpu");
  std::string keys;
  for (const auto& [k, d] : CudaOptionKeys()) keys += (keys.empty() ? "" : ", ") + k;
  cmd->add_option("--cuda-option", f->cuda_options, "CUDA EP option KEY=VALUE (repeatable); keys: " + keys)
      ->allow_extra_args(false);
  cmd->add_option("--device", f->device,
                  "The GPU to run on (a CUDA ordinal after CUDA_VISIBLE_DEVICES), or all: the same benchmark on "
                  "each visible GPU, side by side, the fastest and the slowest named (needs --provider cuda)");
  cmd->add_option("--opt", f->opt, "Graph optimisation level: disable, basic, extended, all")
      ->check(CLI::IsMember({"disable", "basic", "extended", "all"}))
      ->default_val("all");
  cmd->add_option("--save-optimized", f->save_optimized, "Write the optimised graph to this path");
  cmd->add_option("--intra-threads", f->intra_threads, "Intra-op threads (0: ORT's default)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--inter-threads", f->inter_threads, "Inter-op threads (0: ORT's default)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--execution-mode", f->execution_mode, "sequential or parallel")
      ->check(CLI::IsMember({"sequential", "parallel"}))
      ->default_val("sequential");
  cmd->add_option("--io", f->io,
                  "I/O mode: host (tensors copied every run), bound (outputs stay on the device), resident (inputs and "
                  "outputs on the device; copies not timed), cuda-graph (resident + CUDA graph replay), served (as "
                  "`ortgpu serve` runs a batch: inputs staged in pinned memory, outputs copied to the host), "
                  "served-graph (as serve runs a CUDA graph: staged inputs copied in, replay, outputs copied out). "
                  "Only served and served-graph are what serve reproduces; --sweep recommends only those")
      ->check(CLI::IsMember({"host", "bound", "resident", "cuda-graph", "served", "served-graph"}))
      ->default_val("host");
  cmd->add_option("--request-rows", f->request_rows,
                  "With --io served: measure a served-shaped run, each batch joined from separate requests of this "
                  "many rows through serve's own batch runner (rows gathered into the pinned staging, the run, the "
                  "outputs split per request), as serve's worker runs a batch of client requests; 0 (the default) "
                  "stages the batch once")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch", f->batches, "Batch sizes, comma-separated (e.g. 1,8,32); default 1")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->allow_extra_args(false);
  cmd->add_option("--concurrency", f->concurrency, "Runs in flight, comma-separated (e.g. 1,4)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->allow_extra_args(false);
  cmd->add_option("--concurrency-mode", f->concurrency_mode, "shared (N threads, one session) or per-worker (N sessions)")
      ->check(CLI::IsMember({"shared", "per-worker"}))
      ->default_val("shared");
  cmd->add_option("--iterations", f->iterations, "Measured runs per configuration")->check(CLI::PositiveNumber)->default_val(200);
  cmd->add_option("--duration", f->duration_s, "Measure for this many seconds instead of --iterations (at most a week)")
      ->check(CLI::Range(0.0, 604800.0));
  cmd->add_option("--warmup", f->warmup, "Untimed runs before measuring (per worker)")->check(CLI::NonNegativeNumber)->default_val(10);
  cmd->add_option("--shape", f->shapes, "NAME:DIMS for input NAME (input_ids:1x128) or a symbolic dim (sequence:128); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--int-range", f->int_ranges, "NAME:LO:HI, integer input values in [LO,HI) (input_ids:0:30000); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--input", f->input_files, "NAME=FILE, real data from a .npy or ONNX TensorProto .pb file; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--seed", f->seed, "Seed of the generated inputs")->default_val(1);
  cmd->add_flag("--no-check", f->no_check, "Skip the accuracy checks: against the CPU provider, and --precision's against fp32");
  cmd->add_option("--atol", f->atol, "Accuracy: absolute tolerance")->default_val(1e-3);
  cmd->add_option("--rtol", f->rtol, "Accuracy: tolerance as a share of each output's range (5% admits TF32)")->default_val(5e-2);
  cmd->add_option("--precision", f->precisions,
                  "Precisions to measure, comma-separated: fp32 (TF32 off), tf32 (the CUDA default), fp16, mixed (fp16 "
                  "with the nodes that break --budget kept fp32); converted once each in-process and judged against "
                  "fp32. Default: tf32 on CUDA, fp32 on the CPU (where tf32 is fp32), not judged. With --sweep: the "
                  "precision axis")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "mixed"}))
      ->allow_extra_args(false);
  cmd->add_option("--budget", f->budget,
                  std::string(kPrecisionBudgetHelp) + "; a precision outside it is measured, marked, never recommended");
  cmd->add_flag("--sweep", f->sweep, "Compare a matrix of settings and recommend the best for latency and throughput");
  cmd->add_option("--sweep-axes", f->sweep_axes, AxesHelp())->delimiter(',')->allow_extra_args(false);
  cmd->add_flag("--memory", f->memory,
                "Measure the memory at each batch size (NVML's device memory on GPU providers, ONNX Runtime's arenas) "
                "and print the fit a model's peak is predicted from (docs/MEMORY.md); batch sizes run in ascending "
                "order. On the CPU provider the table is the host arena: device memory is not measured");
  cmd->add_flag("--json", f->json, "Print one JSON document instead of the table");
  cmd->add_flag("--csv", f->csv, "Print CSV instead of the table");
  cmd->add_flag("--samples", f->samples, "With --json: include every raw latency sample");
  cmd->add_option("--html", f->html, "Write a self-contained HTML report (charts, table) to FILE");
  cmd->add_option("--config-out", f->config_out, "With --sweep: write the recommended config.pbtxt fragment to FILE");
  cmd->add_flag("!--no-progress", f->progress, "No progress bar on a terminal");
  cmd->callback([f, &result]() { result.exit_code = RunBenchCommand(*f); });
}

}  // namespace ortgpu::cli
