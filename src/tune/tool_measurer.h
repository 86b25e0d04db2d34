// ToolMeasurer: the real Measurer of `ortgpu tune` (issue 28).
//
// JudgePrecision converts the model with bench's own ModelPreparer (the code
// `bench --precision` runs: precision::ConvertPrecision, judged against true
// float32 on the CUDA EP with the accuracy budget) and keeps the converted
// bytes for the in-process runs, so each precision is converted once.
//
// InProcess runs bench's own RunBenchmark on the engine choice at every
// batch asked in one call (one session for all of them), in the I/O mode
// serve runs (served, or served-graph with CUDA graphs), for a short fixed
// number of iterations: the figure is the p50 of one batch and its noise.
// When one batch fails, each is measured alone so the others still count.
//
// Served writes the candidate's config.pbtxt into a scratch model
// repository, starts `ortgpu serve` on it as a child (free ports), times its
// load, finds the goodput with SearchGoodput (goodput_search.h) over perf
// steps (perf::RunPerf, one step each, HTTP or gRPC), and stops the server.
//
// Single-threaded, like the search that drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/inputs.h"
#include "model_config.pb.h"
#include "ort/accuracy.h"
#include "ort/session_options.h"
#include "perf/measure.h"
#include "perf/perf.h"
#include "tune/candidates.h"
#include "tune/search.h"

namespace ortgpu::tune {

struct ToolMeasurerOptions {
  std::string model_path;  // the user's model; never modified (hard-linked or copied into scratch)
  Provider provider = Provider::kCuda;
  // The model's max_batch_size as the config writer writes it (0: no batching).
  int64_t max_batch_size = 0;
  // The user's config a model folder brought (ScratchBase in model_folder.h):
  // each candidate is served on it, as it will be written.
  std::optional<inference::ModelConfig> base;
  // The ortgpu binary whose `serve` is started (the running one: /proc/self/exe).
  std::string ortgpu_binary;
  // A folder tune may write the scratch repository into (removed per candidate).
  std::string scratch_dir;

  // The inputs bench generates (--shape, --int-range), and for perf and
  // serve's warm-up each input's full shape at one row, resolved from them
  // (perf sees the served model's -1 dims, not the ONNX file's dim names).
  bench::InputSpec inputs;
  std::map<std::string, std::vector<int64_t>> served_shapes;
  // The accuracy budget converted precisions are judged with, its text for
  // serve's precision_budget parameter ("" when it is serve's default), and
  // the batch of the inputs it is judged on.
  PrecisionBudget budget;
  std::string budget_parameter;
  int64_t judge_batch = 8;

  // In-process: warm-up and measured runs per batch.
  int warmup = 5;
  int64_t iterations = 30;

  // Served: perf's client (protocol, I/O threads), the load search
  // (connections up to max_concurrency), and the windows of its short
  // and full steps.
  perf::Protocol protocol = perf::Protocol::kHttp;
  int perf_threads = 1;
  int max_concurrency = 64;
  double load_precision = 0.25;
  perf::MeasureOptions quick_step{.window_ms = 750, .stability = 0.10, .max_trials = 3, .stable_windows = 2};
  perf::MeasureOptions full_step{.window_ms = 1500, .stability = 0.10, .max_trials = 4, .stable_windows = 3};
  // How long serve may take to load and warm up a candidate.
  int64_t load_timeout_s = 600;
  // One line per measurement phase ("serving inst=2 batch=8 ... on port 41234").
  std::function<void(const std::string&)> log;
};

class ToolMeasurer : public Measurer {
 public:
  explicit ToolMeasurer(ToolMeasurerOptions options);
  ~ToolMeasurer() override;
  Expected<PrecisionVerdict> JudgePrecision(Precision precision) override;
  std::vector<Expected<Measurement>> InProcess(const EngineChoice& engine, const std::vector<int64_t>& batches) override;
  Expected<Measurement> Served(const ServedCandidate& candidate, const ServedLoad& load) override;

 private:
  struct Converter;
  // The converted model's bytes for fp16 and mixed ("" for the others).
  Expected<std::string> ModelBytes(Precision precision);
  Expected<std::vector<Expected<Measurement>>> Bench(const EngineChoice& engine, const std::vector<int64_t>& batches);

  ToolMeasurerOptions options_;
  std::unique_ptr<Converter> converter_;
  std::map<Precision, std::string> converted_;
};

// The scratch or output model folder: DIR/config.pbtxt and DIR/1/model.onnx,
// the model hard-linked (copied across file systems). The user's file is
// never modified; an existing DIR/1/model.onnx is replaced.
Status WriteModelFolder(const std::string& dir, const std::string& model_path, const std::string& config_pbtxt);

// The CUDA EP options of `engine` that differ from ORT's defaults (prefer_nhwc,
// cudnn_conv_algo_search, fuse_conv_bias; use_tf32=0 for fp32;
// enable_cuda_graph comes with the served-graph mode).
std::map<std::string, std::string> EngineCudaOptions(const EngineChoice& engine);

// The half-width of the 95% interval of the median of `samples`, as a share
// of it (1.96 x 1.253 x 1.4826 x MAD / sqrt(n) / median); 0 below 2 samples.
double MedianRelativeNoise(std::vector<double> samples);

}  // namespace ortgpu::tune
