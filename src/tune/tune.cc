#include "tune/tune.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <system_error>

#include <fmt/format.h>

#include "bench/inputs.h"
#include "onnx.pb.h"
#include "ort/session.h"
#include "precision/model_cache.h"
#include "sys/file_system.h"
#include "tune/config_writer.h"
#include "tune/gpu_memory.h"
#include "tune/model_folder.h"
#include "tune/tool_measurer.h"
#include "tune/tune_output.h"

namespace ortgpu::tune {
namespace fs = std::filesystem;
namespace {

// Prints every new measurement as it is taken (the history holds the rest).
class LoggingMeasurer : public Measurer {
 public:
  LoggingMeasurer(Measurer& inner, const std::function<void(const std::string&)>& log) : inner_(inner), log_(log) {}
  Expected<PrecisionVerdict> JudgePrecision(Precision precision) override {
    auto v = inner_.JudgePrecision(precision);
    if (!log_) return v;
    if (!v.ok()) {
      log_(fmt::format("precision {}: conversion failed: {}", PrecisionName(precision), v.status().message()));
    } else {
      log_(fmt::format("precision {}: {} the accuracy budget (min cosine {:.6f}, max rel error {:.4f}{}){}",
                       PrecisionName(precision), v->within_budget ? "within" : "OUTSIDE", v->min_cosine,
                       v->max_rel_error, v->top1 ? fmt::format(", top-1 {:.1f}%", *v->top1 * 100) : "",
                       v->detail.empty() ? "" : ": " + v->detail));
    }
    return v;
  }
  std::vector<Expected<Measurement>> InProcess(const EngineChoice& engine, const std::vector<int64_t>& batches) override {
    auto all = inner_.InProcess(engine, batches);
    for (size_t i = 0; i < all.size() && i < batches.size(); ++i) {
      Log(fmt::format("in-process {} batch={}", engine.Key(), batches[i]), all[i], "ms/batch");
    }
    return all;
  }
  Expected<Measurement> Served(const ServedCandidate& candidate, const ServedLoad& load) override {
    auto m = inner_.Served(candidate, load);
    Log("served " + candidate.Key(), m, "ms p99");
    return m;
  }

 private:
  void Log(const std::string& what, const Expected<Measurement>& m, const char* unit) {
    if (!log_) return;
    if (!m.ok()) {
      log_(what + ": failed: " + m.status().message());
      return;
    }
    std::string details;
    if (m->rel_noise > 0) details += fmt::format(", noise +-{:.1f}%", m->rel_noise * 100);
    if (m->concurrency > 0) details += fmt::format(", at {} connections", m->concurrency);
    if (m->load_s) details += fmt::format(", loaded in {:.1f} s", *m->load_s);
    if (m->errors > 0) details += fmt::format(", {} failed requests", m->errors);
    log_(fmt::format("{}: {:.3f} {}, {:.1f} items/s{}", what, m->latency_ms, unit, m->items_per_s, details));
  }
  Measurer& inner_;
  const std::function<void(const std::string&)>& log_;
};

bool VariableBeyondBatch(const std::vector<TensorInfo>& tensors) {
  for (const TensorInfo& t : tensors) {
    for (size_t d = 1; d < t.shape.size(); ++d) {
      if (t.shape[d] < 0) return true;
    }
  }
  return false;
}

std::string SelfBinary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("ortgpu") : self.string();
}

// Whether the model's main graph has a convolution (read without its
// external data). Unknown (the file does not parse) counts as yes: the
// knobs are then screened rather than skipped.
bool HasConv(const std::string& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  ::onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) return true;
  for (const auto& node : model.graph().node()) {
    const std::string& op = node.op_type();
    if (op == "Conv" || op == "ConvTranspose" || op == "FusedConv" || op == "QLinearConv" || op == "ConvInteger") {
      return true;
    }
  }
  return false;
}

std::string ShapeFlagText(const std::vector<int64_t>& dims) {
  std::string out;
  for (int64_t d : dims) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}

}  // namespace

Expected<ModelTraits> TraitsFromModel(const std::string& model_path, const SpaceOptions& space) {
  SessionOptions so;
  so.provider = Provider::kCpu;
  ORTGPU_ASSIGN_OR_RETURN(auto session, Session::Load(model_path, so));
  ModelTraits traits;
  if (bench::HasDynamicBatch(session->inputs()) && !space.batches.empty()) {
    traits.max_batch_size = *std::max_element(space.batches.begin(), space.batches.end());
  }
  traits.variable_non_batch_dim = VariableBeyondBatch(session->inputs()) || VariableBeyondBatch(session->outputs());
  traits.has_conv = HasConv(model_path);
  EstimateModelMemory(model_path, session->inputs(), session->outputs(), traits);
  return traits;
}

Expected<std::map<std::string, std::vector<int64_t>>> ServedShapes(const std::vector<TensorInfo>& inputs,
                                                                    const bench::InputSpec& spec) {
  std::map<std::string, std::vector<int64_t>> out;
  if (!spec.files.empty()) {
    // The inputs at one row, as bench makes them: a file's shape wins, cut to
    // one row where the model batches, and what does not fit the model (an
    // input it lacks, another dtype, a dim no flag sizes) fails here, before
    // anything is measured.
    ORTGPU_ASSIGN_OR_RETURN(const std::vector<Tensor> one_row, bench::MakeInputs(inputs, spec, 1));
    for (size_t i = 0; i < inputs.size() && i < one_row.size(); ++i) {  // one tensor per input, in order
      if (spec.files.count(inputs[i].name) > 0) out[inputs[i].name] = one_row[i].shape;
    }
  }
  for (const TensorInfo& in : inputs) {
    if (spec.shapes.empty() || out.count(in.name) > 0) continue;
    bool named = spec.shapes.count(in.name) > 0;
    for (const std::string& dim : in.dim_names) named = named || (!dim.empty() && spec.shapes.count(dim) > 0);
    if (!named) continue;
    ORTGPU_ASSIGN_OR_RETURN(out[in.name], bench::ResolveShape(in, spec, 1));
  }
  return out;
}

std::string BudgetTag(const PrecisionBudget& b) {
  return fmt::format("cosine={:g},top1={:g},rel={:g},nonfinite={}", b.min_cosine, b.min_top1, b.max_rel_error,
                     b.allow_nonfinite ? "allow" : "deny");
}

Expected<std::string> InputsTag(const bench::InputSpec& spec) {
  std::string out;
  for (const auto& [name, dims] : spec.shapes) out += (out.empty() ? "" : ",") + name + ":" + ShapeFlagText(dims);
  for (const auto& [name, r] : spec.int_ranges) out += fmt::format("{}{}:{}:{}", out.empty() ? "" : ",", name, r.lo, r.hi);
  for (const auto& [name, path] : spec.files) {
    // The data's digest, not its path: the same file moved keeps its
    // measurements, and a changed file measures again.
    auto bytes = RealFileSystem().ReadFile(path);
    if (!bytes.ok()) return bytes.status().WithContext("--input " + name + "=" + path);
    precision::ContentDigest digest;
    digest.Add(*bytes);
    out += (out.empty() ? "" : ",") + name + "=" + digest.Hex().substr(0, 16);
  }
  return out.empty() ? "" : "inputs=" + out;
}

SpaceOptions SpaceFor(Provider provider) {
  SpaceOptions space;
  if (provider != Provider::kCpu) {
    space.adaptive_padding = {false};
    return space;
  }
  space.precisions = {Precision::kTf32};
  space.prefer_nhwc = {false};
  space.cuda_graphs = {false};
  space.conv_searches = {ConvAlgoSearch::kExhaustive};
  space.fuse_conv_bias = {false};
  space.batches = {1, 4};
  space.curve_batches = {1, 4};
  space.screening_batch = 4;
  space.instances = {1, 2};
  space.padding = {false};
  space.queue_delays_us = {0};
  space.workers = {ServedCandidate::kDefaultWorkers};
  return space;
}

namespace {

// The measurer's settings for the provider: on the CPU short steps and few
// iterations (it checks the machinery); on a GPU the H200 run's.
ToolMeasurerOptions MeasurerOptions(const TuneOptions& options, const TuneInput& input, const ModelTraits& traits,
                                    std::map<std::string, std::vector<int64_t>> served_shapes) {
  ToolMeasurerOptions mo;
  mo.model_path = input.model_file;
  mo.base = ScratchBase(input);
  mo.provider = options.provider;
  mo.max_batch_size = traits.max_batch_size;
  mo.ortgpu_binary = options.ortgpu_binary.empty() ? SelfBinary() : options.ortgpu_binary;
  mo.scratch_dir = (fs::path(input.output_dir) / ".tune-scratch").string();
  mo.inputs = options.inputs;
  mo.served_shapes = std::move(served_shapes);
  mo.budget = options.accuracy;
  mo.budget_parameter = BudgetTag(options.accuracy) == BudgetTag(PrecisionBudget{}) ? "" : BudgetTag(options.accuracy);
  mo.max_concurrency = options.max_concurrency;
  mo.protocol = options.protocol;
  mo.log = options.log;
  if (options.provider == Provider::kCpu) {
    mo.warmup = 2;
    mo.iterations = 20;
    mo.quick_step = {.window_ms = 100, .stability = 0.5, .max_trials = 1, .stable_windows = 1};
    mo.full_step = {.window_ms = 200, .stability = 0.5, .max_trials = 2, .stable_windows = 1};
    mo.load_timeout_s = 120;
  } else {
    // perf's I/O threads: 4 on a 16-core machine, as the hand runs had.
    mo.perf_threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency() / 4), 1, 4);
  }
  return mo;
}

}  // namespace

Expected<TuneReport> RunTune(const TuneOptions& options) {
  if (options.model_path.empty()) return InvalidArgument("a model file is required (ortgpu tune MODEL.onnx ...)");
  if (!(options.latency_budget_ms > 0)) {
    return InvalidArgument("--latency-budget-ms must be above 0 (the p99 each candidate's goodput is measured within)");
  }
  if (options.max_minutes < 0) return InvalidArgument("--max-minutes must be 0 (no limit) or more");
  // A file, or a model folder whose config.pbtxt is the base (model_folder.h).
  ORTGPU_ASSIGN_OR_RETURN(const TuneInput input, ResolveTuneInput(options.model_path, options.output_dir));
  if (!input.in_place &&
      fs::weakly_canonical(input.model_file) == fs::weakly_canonical(fs::path(input.output_dir) / "1" / "model.onnx")) {
    return InvalidArgument("--output " + input.output_dir + " holds the model itself; tune replaces "
                           "OUTPUT/1/model.onnx, so name another folder");
  }
  ORTGPU_ASSIGN_OR_RETURN(const GpuMemoryLimit memory_limit,
                          GpuMemoryLimitFromFlag(options.max_gpu_memory, options.provider, nullptr));
  const SpaceOptions space = SpaceFor(options.provider);
  ORTGPU_ASSIGN_OR_RETURN(ModelTraits traits, TraitsFromModel(input.model_file, space));
  std::vector<std::string> setup_notes;
  BoundTraitsByConfig(input, traits, &setup_notes);
  traits.gpu_memory_limit_bytes = memory_limit.bytes;
  if (!memory_limit.note.empty()) setup_notes.push_back(memory_limit.note);
  std::map<std::string, std::vector<int64_t>> served_shapes;
  {
    SessionOptions cpu;
    cpu.provider = Provider::kCpu;
    ORTGPU_ASSIGN_OR_RETURN(auto session, Session::Load(input.model_file, cpu));
    ORTGPU_ASSIGN_OR_RETURN(served_shapes, ServedShapes(session->inputs(), options.inputs));
  }

  std::error_code ec;
  fs::create_directories(input.output_dir, ec);
  if (ec) return InvalidArgument("cannot create --output " + input.output_dir + ": " + ec.message());
  TuneReport report;
  report.details = StartDetails(options, input, traits, memory_limit);
  report.history_path = options.history_path.empty()
                            ? (fs::path(input.output_dir) / "tune_history.jsonl").string()
                            : options.history_path;
  ORTGPU_ASSIGN_OR_RETURN(History history, History::Open(report.history_path, &report.warnings));

  const ToolMeasurerOptions mo = MeasurerOptions(options, input, traits, std::move(served_shapes));
  ToolMeasurer tool(mo);
  LoggingMeasurer measurer(tool, options.log);

  SearchOptions so;
  so.latency_budget_ms = options.latency_budget_ms;
  so.max_evaluations = options.max_evaluations;
  so.max_wall_ns = static_cast<int64_t>(options.max_minutes * 60e9);
  so.max_served = options.max_served;
  so.exhaustive = options.exhaustive;
  so.accuracy_tag = BudgetTag(options.accuracy);
  ORTGPU_ASSIGN_OR_RETURN(so.inputs_tag, InputsTag(options.inputs));
  so.served_tag = options.protocol == perf::Protocol::kGrpc ? "protocol=grpc" : "";
  so.estimate.max_concurrency = options.max_concurrency;
  so.estimate.unpadded_factor = options.provider == Provider::kCpu ? 1.0 : 0.5;
  if (options.provider == Provider::kCpu) {
    // The CPU run checks the machinery: two leaders, measured twice each.
    so.leaders = 2;
    so.repeats = 2;
  }
  auto result = RunSearch(traits, space, so, measurer, history, RealClock());
  fs::remove_all(mo.scratch_dir, ec);
  if (!result.ok()) return result.status();
  report.search = std::move(*result);
  report.search.notes.insert(report.search.notes.begin(), setup_notes.begin(), setup_notes.end());
  CollectMeasurements(traits, space, so, report.search, history, report.details);

  ConfigWriterOptions writer;
  writer.max_batch_size = traits.max_batch_size;
  writer.precision_budget = mo.budget_parameter;
  if (options.provider == Provider::kCpu) writer.instance_kind = inference::ModelInstanceGroup::KIND_CPU;
  writer.comments = {"Written by ortgpu tune (issue 28) for " + input.model_file,
                     fmt::format("latency budget {} ms p99; {}", options.latency_budget_ms,
                                 report.search.decision.reason)};
  // The config (with a winner) and the HTML report (always): tune_output.h.
  ORTGPU_RETURN_IF_ERROR(WriteTuneOutputs(input, writer, report));
  return report;
}

}  // namespace ortgpu::tune
