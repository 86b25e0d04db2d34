#include "tune/tune.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "bench/inputs.h"
#include "ort/session.h"
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
  Expected<Measurement> InProcess(const EngineChoice& engine, int64_t batch) override {
    auto m = inner_.InProcess(engine, batch);
    Log(fmt::format("in-process {} batch={}", engine.Key(), batch), m, "ms/batch");
    return m;
  }
  Expected<Measurement> Served(const ServedCandidate& candidate, double latency_budget_ms) override {
    auto m = inner_.Served(candidate, latency_budget_ms);
    Log("served " + candidate.Key(), m, "ms p99");
    return m;
  }

 private:
  void Log(const std::string& what, const Expected<Measurement>& m, const char* unit) {
    if (!log_) return;
    if (!m.ok()) {
      log_(what + ": failed: " + m.status().message());
    } else {
      log_(fmt::format("{}: {:.3f} {}, {:.1f} items/s", what, m->latency_ms, unit, m->items_per_s));
    }
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
  EstimateModelMemory(model_path, session->inputs(), session->outputs(), traits);
  return traits;
}

SpaceOptions SpaceFor(Provider provider) {
  SpaceOptions space;
  if (provider != Provider::kCpu) return space;
  space.precisions = {Precision::kTf32};
  space.prefer_nhwc = {false};
  space.cuda_graphs = {false};
  space.conv_searches = {ConvAlgoSearch::kExhaustive};
  space.batches = {1, 4};
  space.instances = {1, 2};
  space.padding = {false};
  space.queue_delays_us = {0};
  space.workers = {ServedCandidate::kDefaultWorkers};
  return space;
}

Expected<TuneReport> RunTune(const TuneOptions& options) {
  if (options.model_path.empty()) return InvalidArgument("a model file is required (ortgpu tune MODEL.onnx ...)");
  if (!(options.latency_budget_ms > 0)) {
    return InvalidArgument("--latency-budget-ms must be above 0 (the p99 each candidate's goodput is measured within)");
  }
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

  std::error_code ec;
  fs::create_directories(input.output_dir, ec);
  if (ec) return InvalidArgument("cannot create --output " + input.output_dir + ": " + ec.message());
  TuneReport report;
  report.details = StartDetails(options, input, traits, memory_limit);
  report.history_path = options.history_path.empty()
                            ? (fs::path(input.output_dir) / "tune_history.jsonl").string()
                            : options.history_path;
  ORTGPU_ASSIGN_OR_RETURN(History history, History::Open(report.history_path, &report.warnings));

  const fs::path scratch = fs::path(input.output_dir) / ".tune-scratch";
  ToolMeasurerOptions mo;
  mo.model_path = input.model_file;
  mo.base = ScratchBase(input);
  mo.provider = options.provider;
  mo.max_batch_size = traits.max_batch_size;
  mo.ortgpu_binary = options.ortgpu_binary.empty() ? SelfBinary() : options.ortgpu_binary;
  mo.scratch_dir = scratch.string();
  mo.max_concurrency = options.max_concurrency;
  if (options.provider == Provider::kCpu) {
    mo.iterations = 20;
    mo.warmup = 2;
    mo.window_ms = 300;
    mo.max_trials = 3;
  }
  mo.log = options.log;
  ToolMeasurer tool(mo);
  LoggingMeasurer measurer(tool, options.log);

  SearchOptions so;
  so.latency_budget_ms = options.latency_budget_ms;
  so.max_evaluations = options.max_evaluations;
  auto result = RunSearch(traits, space, so, measurer, history, RealClock());
  fs::remove_all(scratch, ec);
  if (!result.ok()) return result.status();
  report.search = std::move(*result);
  report.search.notes.insert(report.search.notes.begin(), setup_notes.begin(), setup_notes.end());
  CollectMeasurements(traits, space, options.latency_budget_ms, report.search, history, report.details);

  ConfigWriterOptions writer;
  writer.max_batch_size = traits.max_batch_size;
  if (options.provider == Provider::kCpu) writer.instance_kind = inference::ModelInstanceGroup::KIND_CPU;
  writer.comments = {"Written by ortgpu tune (issue 28) for " + input.model_file,
                     fmt::format("latency budget {} ms p99; {}", options.latency_budget_ms,
                                 report.search.decision.reason)};
  // The config (with a winner) and the HTML report (always): tune_output.h.
  ORTGPU_RETURN_IF_ERROR(WriteTuneOutputs(input, writer, report));
  return report;
}

std::string RenderTuneText(const TuneReport& report) {
  const SearchResult& s = report.search;
  std::string out;
  for (const auto& w : report.warnings) out += "warning: " + w + "\n";
  out += fmt::format("measurements: {} new, {} from the history ({})\n", s.evaluations, s.reused, report.history_path);
  if (!s.served.empty()) out += "served candidates (goodput within the budget, items/s):\n";
  for (const ServedOutcome& o : s.served) {
    std::string goodputs;
    for (double g : o.goodputs) goodputs += fmt::format("{}{:.1f}", goodputs.empty() ? "" : ", ", g);
    out += fmt::format("  {}: ceiling {:.1f}, floor {:.3f} ms; goodput [{}]{}\n", o.candidate.Key(),
                       o.bounds.ceiling_items_per_s, o.bounds.floor_ms, goodputs,
                       o.error.empty() ? "" : "; failed: " + o.error);
  }
  if (!s.rejected.empty()) out += fmt::format("left out: {} candidates\n", s.rejected.size());
  for (const Rejected& r : s.rejected) out += "  " + r.candidate + ": " + r.reason + "\n";
  for (const std::string& n : s.notes) out += "note: " + n + "\n";
  if (!s.winner) {
    out += "no winner: no served candidate met the latency budget; raise --latency-budget-ms\n";
    return out;
  }
  out += "winner: " + s.winner->Key() + "\n";
  out += "why: " + s.decision.reason + "\n";
  out += "written: " + report.config_path + "\n";
  return out;
}

}  // namespace ortgpu::tune
