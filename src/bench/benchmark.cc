#include "bench/benchmark.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "bench/memory_report.h"
#include "bench/prepared_model.h"
#include "bench/sweep.h"
#include "onnx/graph_derivation.h"
#include "ort/arena_stats.h"
#include "ort/row_sets.h"
#include "ort/runtime.h"
#include "ort/session.h"
#include "precision/model_file.h"
#include "sys/file_system.h"

namespace ortgpu::bench {

std::string_view ConcurrencyModeName(ConcurrencyMode m) {
  return m == ConcurrencyMode::kSharedSession ? "shared" : "per-worker";
}

Expected<ConcurrencyMode> ParseConcurrencyMode(std::string_view name) {
  if (name == "shared") return ConcurrencyMode::kSharedSession;
  if (name == "per-worker" || name == "sessions") return ConcurrencyMode::kSessionPerWorker;
  return InvalidArgument("unknown concurrency mode '" + std::string(name) +
                         "'; valid: shared (N threads over one session), per-worker (N sessions, one thread each)");
}

bool BenchReport::ok() const {
  for (const auto& r : results) {
    if (!r.error.ok() || (r.accuracy.checked && !r.accuracy.passed)) return false;
  }
  return !results.empty();
}

namespace {

// `converted`: a converted model's bytes (fp16, mixed), or null for the
// model bench was given.
Expected<std::unique_ptr<Session>> LoadSession(const BenchOptions& o, const SessionOptions& so,
                                               const std::string* converted = nullptr) {
  if (converted != nullptr && !converted->empty()) return Session::LoadFromBytes(*converted, so, o.model_path);
  if (!o.model_bytes.empty()) return Session::LoadFromBytes(o.model_bytes, so, o.model_path);
  ORTGPU_RETURN_IF_ERROR(CheckRegularFile(o.model_path, "model"));
  auto session = Session::Load(o.model_path, so);
  // A model file that does not load is a failed run (exit 1), as in doctor,
  // not bad usage: the command line was right, the file is not.
  if (!session.ok() && session.status().code() == Code::kInvalidArgument) {
    return FailedPrecondition(session.status().message());
  }
  return session;
}

SessionOptions SessionFor(const BenchOptions& o, const Variant& v) {
  SessionOptions so = o.session;
  so.optimization = v.optimization;
  so.cuda_options = v.cuda_options;
  return so;
}

// The batch sizes to run: the requested ones, checked against a fixed batch.
Expected<std::vector<int64_t>> Batches(const BenchOptions& o, const std::vector<TensorInfo>& inputs) {
  const bool dynamic = HasDynamicBatch(inputs);
  int64_t fixed = 1;
  for (const auto& in : inputs) {
    if (!in.shape.empty() && in.shape[0] > 0) fixed = in.shape[0];
  }
  if (o.batches.empty()) return std::vector<int64_t>{dynamic ? 1 : fixed};
  for (int64_t b : o.batches) {
    if (b < 1) return InvalidArgument(fmt::format("--batch {} is not a positive batch size", b));
    if (!dynamic && b != fixed) {
      return InvalidArgument(fmt::format("--batch {} does not fit: the model's first dimension is fixed at {} (shape {}); "
                                         "export it with a dynamic batch axis or use --batch {}",
                                         b, fixed, ShapeToString(inputs.front().shape), fixed));
    }
  }
  return o.batches;
}

}  // namespace

std::vector<RunnerPlan> PlanRunners(const std::vector<int64_t>& batches, const std::vector<int>& concurrency,
                                    ConcurrencyMode mode) {
  std::vector<RunnerPlan> plan;
  std::map<size_t, int> next_id;  // by session
  for (int64_t batch : batches) {
    for (int conc : concurrency) {
      for (int w = 0; w < conc; ++w) {
        RunnerPlan p;
        p.batch = batch;
        p.concurrency = conc;
        p.worker = w;
        p.session = mode == ConcurrencyMode::kSessionPerWorker ? static_cast<size_t>(w) : 0;
        p.graph_id = ++next_id[p.session];
        plan.push_back(p);
      }
    }
  }
  return plan;
}

namespace {

struct BatchData {
  std::vector<Tensor> inputs;
  std::vector<Tensor> reference;  // CPU outputs; empty when not checked
  RowSets row_sets;               // outputs compared as sets of rows (detections after NMS)
};

// The model at one precision, as every variant of that precision runs it.
struct ModelAtPrecision {
  PreparedModel prepared;
  Status error;  // the conversion or its reference failed: every variant of it fails so
  // Converted models: the CPU provider's outputs of the converted model per
  // batch, the reference of the per-configuration check (empty when not checked).
  std::map<int64_t, std::vector<Tensor>> reference;
  bool unchecked = false;  // the CPU provider cannot run the converted model
};

// A GPU run is checked against the CPU provider running the same model. Where
// the CPU cannot run it (a kernel only the GPU has: attention's packed QKV,
// fusion/attention.cc), the check is skipped with the reason instead of
// failing the benchmark; on the CPU provider the failure stands.
bool SkipsCpuCheck(const BenchOptions& o, const std::string& model, const Status& why, BenchReport& report) {
  if (o.session.provider == Provider::kCpu) return false;
  report.notes.push_back(fmt::format("{}: outputs not checked against the CPU provider, which cannot run it ({})", model,
                                     why.message()));
  return true;
}

// What the variant's sessions hold in their arenas now (bench --memory).
ArenaUse ReadArenas(const std::vector<std::unique_ptr<Session>>& sessions, const ArenaUse& created) {
  ArenaUse use = created;
  for (size_t i = 0; i < sessions.size() && use.unavailable.empty(); ++i) {
    auto stats = ReadArenaStats(*sessions[i]);
    if (!stats.ok()) {
      use.unavailable = stats.status().message();
      break;
    }
    use.reserved += stats->reserved;
    use.in_use += stats->in_use;
    if (i == 0) use.first_reserved = stats->reserved;
  }
  return use;
}

// Runs one variant: sessions created once, then every batch x concurrency.
void RunVariant(const BenchOptions& o, const BenchHooks& hooks, const Variant& v, const ModelAtPrecision& model,
                const std::vector<int64_t>& batches, const std::map<int64_t, BatchData>& data, GpuMemoryProbe& probe,
                size_t& index, size_t total, BenchReport& report, Status& fatal) {
  const int max_conc = *std::max_element(o.concurrency.begin(), o.concurrency.end());
  const int sessions_needed = o.concurrency_mode == ConcurrencyMode::kSessionPerWorker ? max_conc : 1;
  std::vector<std::unique_ptr<Session>> sessions;
  Status session_error = model.error;
  double create_ms = 0;
  for (int s = 0; s < sessions_needed && session_error.ok(); ++s) {
    SessionOptions so = SessionFor(o, v);
    if (s > 0) so.optimized_model_path.clear();
    auto loaded = LoadSession(o, so, &model.prepared.model_bytes);
    if (!loaded.ok()) {
      session_error = loaded.status();
      break;
    }
    if (s == 0) create_ms = (*loaded)->load_ms();
    sessions.push_back(std::move(loaded).value());
  }
  // --memory: each session's own weights are what its arena holds before
  // any run (ORT reserves the initializers there).
  ArenaUse created;
  if (o.memory) {
    created.sessions = static_cast<int>(sessions.size());
    for (const auto& s : sessions) {
      auto stats = ReadArenaStats(*s);
      if (!stats.ok()) {
        created.unavailable = stats.status().message();
        break;
      }
      created.weights += stats->in_use;
    }
  }
  const std::vector<RunnerPlan> plan = PlanRunners(batches, o.concurrency, o.concurrency_mode);
  size_t planned = 0;
  for (const int64_t batch : batches) {
    for (int conc : o.concurrency) {
      const RunnerPlan* runner_plan = &plan[planned];
      planned += static_cast<size_t>(conc);
      ConfigResult r;
      r.config = {v, o.session.provider, batch, conc, o.concurrency_mode};
      r.session_create_ms = create_ms;
      r.precision_accuracy = model.prepared.accuracy;
      ++index;
      if (hooks.on_config) hooks.on_config(fmt::format("{} batch {} concurrency {}", v.name, batch, conc), index, total);
      auto finish = [&](Status st) {
        r.error = std::move(st);
        // Without --sweep the first failure ends the run; among several
        // configurations it names which one failed.
        if (!r.error.ok() && !o.sweep && fatal.ok()) fatal = total > 1 ? r.error.WithContext(ConfigurationLabel(r.config)) : r.error;
        report.results.push_back(std::move(r));
      };
      if (!session_error.ok()) {
        finish(session_error);
        continue;
      }
      if (NeedsCudaGraphOption(v.io) && conc > 1 && o.concurrency_mode == ConcurrencyMode::kSharedSession) {
        Status refused = FailedPrecondition(fmt::format(
            "I/O mode {} at concurrency {} needs --concurrency-mode per-worker: ONNX Runtime does not support CUDA "
            "graphs run from several threads on one session (serve gives each worker sessions of its own)",
            IoModeName(v.io), conc));
        if (o.sweep) {
          // A sweep measures what it can: the other concurrencies still run.
          report.notes.push_back(fmt::format("{} batch {} concurrency {} not measured: {}", v.name, batch, conc, refused.message()));
          continue;
        }
        finish(std::move(refused));
        continue;
      }
      const BatchData& bd = data.at(batch);
      std::vector<std::unique_ptr<BoundRunner>> runners;
      std::vector<BoundRunner*> workers;
      Status bind_error;
      for (int w = 0; w < conc; ++w) {
        const Session& s = *sessions[runner_plan[w].session];
        BoundRunnerOptions ro;
        ro.mode = v.io;
        if (v.io == IoMode::kServed) ro.request_rows = o.request_rows;
        ro.graph_id = runner_plan[w].graph_id;  // never one another runner of this session had
        auto runner = BoundRunner::Create(s, bd.inputs, ro);
        if (!runner.ok()) {
          bind_error = runner.status();
          break;
        }
        workers.push_back(runner->get());
        runners.push_back(std::move(runner).value());
      }
      if (!bind_error.ok()) {
        finish(bind_error);
        continue;
      }
      r.memory = runners.front()->memory();
      auto m = Measure(workers, o.load, *hooks.clock, hooks.progress);
      if (!m.ok()) {
        finish(m.status());
        continue;
      }
      r.first_run_ms = m->first_run_ms;
      r.wall_s = m->wall_s;
      r.cpu_utilisation = m->wall_s > 0 ? 100.0 * m->cpu_s / m->wall_s : 0;
      r.stats = ComputeStatistics(m->samples_ms, m->wall_s, batch, o.statistics);
      r.samples_ms = std::move(m->samples_ms);
      r.peak_rss_mb = CurrentProcessUsage().peak_rss_mb;
      if (auto used = probe.UsedBytes()) r.gpu_memory_mb = static_cast<double>(*used) / (1024.0 * 1024.0);
      r.gpu_memory_source = probe.source();
      if (o.memory) r.arena = ReadArenas(sessions, created);
      static const std::vector<Tensor> kNotChecked;
      const auto own = model.reference.find(batch);
      const std::vector<Tensor>& reference = model.unchecked           ? kNotChecked
                                             : model.reference.empty() ? bd.reference
                                             : own != model.reference.end() ? own->second
                                                                            : kNotChecked;
      if (!reference.empty()) {
        auto outputs = runners.front()->FetchOutputs();
        if (!outputs.ok()) {
          finish(outputs.status().WithContext("reading outputs for the accuracy check"));
          continue;
        }
        r.accuracy = CompareOutputs(*outputs, reference, o.tolerance, bd.row_sets);
      }
      finish(Status::Ok());
    }
  }
}

// The precisions asked, as the provider runs them (tf32 is fp32 on the
// CPU), each once, in the order given.
std::vector<Precision> EffectivePrecisions(const BenchOptions& o) {
  std::vector<Precision> out;
  for (Precision p : o.precisions) {
    p = EffectivePrecision(o.session.provider, p);
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

bool SweepsPrecision(const BenchOptions& o) {
  return std::any_of(o.sweep_axes.begin(), o.sweep_axes.end(),
                     [](const std::string& a) { return a.substr(0, a.find('=')) == "precision"; });
}

Status ValidatePrecisions(const BenchOptions& o) {
  const bool asked = !o.precisions.empty() || SweepsPrecision(o);
  if (asked && o.session.provider == Provider::kTensorRt) {
    return InvalidArgument("--precision with --provider tensorrt: TensorRT makes its own precision choices "
                           "(--cuda-option does not reach it; use its trt_fp16_enable); bench judges precisions on "
                           "cpu or cuda");
  }
  if (!o.precisions.empty() && SweepsPrecision(o)) {
    return InvalidArgument("--precision and --sweep-axes precision=... both list precisions; give them once");
  }
  auto tf32 = o.session.cuda_options.find("use_tf32");
  const bool tf32_off = tf32 != o.session.cuda_options.end() && tf32->second == "0";
  if (tf32_off && o.session.provider == Provider::kCuda &&
      (std::count(o.precisions.begin(), o.precisions.end(), Precision::kTf32) > 0 || SweepsPrecision(o))) {
    return InvalidArgument("--cuda-option use_tf32=0 is --precision fp32; with --precision or a precision axis, "
                           "leave use_tf32 to them");
  }
  return Status::Ok();
}

// Reads the model as a protobuf for the conversions and the accuracy check.
Expected<::onnx::ModelProto> ReadModel(const BenchOptions& o) {
  if (o.model_bytes.empty()) return precision::ReadModelFile(o.model_path);
  ::onnx::ModelProto model;
  if (!model.ParseFromString(o.model_bytes)) return InvalidArgument(o.model_path + " is not an ONNX model");
  return model;
}

// The model at every precision among `variants`, made once each and judged
// against true fp32 when precisions were asked. A failure is fatal without
// --sweep; with it, the precision's variants carry it.
Expected<std::map<Precision, ModelAtPrecision>> PrepareModels(const BenchOptions& o, const std::vector<Variant>& variants,
                                                             const std::map<int64_t, BatchData>& data, BenchReport& report) {
  std::vector<Precision> needed;
  for (const auto& v : variants) {
    if (std::find(needed.begin(), needed.end(), v.precision) == needed.end()) needed.push_back(v.precision);
  }
  std::map<Precision, ModelAtPrecision> models;
  const bool asked = !o.precisions.empty() || SweepsPrecision(o);
  if (!asked) {
    // Unchanged behaviour: the provider's default precision, not judged
    // (fp32 on the CPU is the reference by definition).
    for (Precision p : needed) {
      models[p].prepared.precision = p;
      models[p].prepared.accuracy = p == Precision::kFp32 ? ReferenceAccuracy() : PrecisionAccuracy{};
      models[p].prepared.accuracy.note = p == Precision::kFp32 ? "fp32 is the reference" : "not judged: give --precision";
    }
    return models;
  }
  if (o.check_accuracy) report.precision_budget = DescribeBudget(o.budget);
  std::optional<ModelPreparer> preparer;
  if (needed.size() > 1 || needed.front() != Precision::kFp32) {
    ORTGPU_ASSIGN_OR_RETURN(auto fp32, ReadModel(o));
    PrepareOptions po;
    po.session = o.session;
    po.budget = o.budget;
    po.check_accuracy = o.check_accuracy;
    // The largest batch: the most rows to judge the precision by.
    preparer.emplace(std::move(fp32), data.rbegin()->second.inputs, po);
  }
  SessionOptions cpu;
  cpu.intra_op_threads = o.session.intra_op_threads;
  cpu.free_dimensions = o.session.free_dimensions;
  for (Precision p : needed) {
    ModelAtPrecision& m = models[p];
    auto prepared = p == Precision::kFp32 ? Expected<PreparedModel>(PreparedModel{p, "", ReferenceAccuracy(), ""})
                                          : preparer->Prepare(p);
    if (!prepared.ok()) {
      if (!o.sweep || prepared.status().code() == Code::kInvalidArgument) return prepared.status();
      m.prepared.precision = p;
      m.error = prepared.status();
      continue;
    }
    m.prepared = std::move(prepared).value();
    if (!m.prepared.summary.empty()) report.notes.push_back(m.prepared.summary);
    const PrecisionAccuracy& a = m.prepared.accuracy;
    if (a.checked && !a.within_budget) {
      std::string why;
      for (const auto& v : a.violations) why += (why.empty() ? "" : "; ") + v;
      report.notes.push_back(fmt::format("{} is outside the accuracy budget ({}): measured, never recommended{}", PrecisionName(p),
                                         why, p == Precision::kFp16 ? "; mixed keeps the nodes responsible in fp32" : ""));
    }
    if (!IsConverted(p) || !o.check_accuracy) continue;
    // The per-configuration check compares with the CPU running the same
    // converted model; what the precision itself changed is judged above.
    // On a GPU provider, at the smallest batch only: ORT runs float16 on the
    // CPU through Casts, about a second a row for BERT-base, so every batch
    // would cost minutes (the larger batches' rows are then not checked).
    auto session = LoadSession(o, cpu, &m.prepared.model_bytes);
    const bool smallest_only = o.session.provider != Provider::kCpu && data.size() > 1;
    if (smallest_only) {
      report.notes.push_back(fmt::format("{}: the check against the CPU running the same {} model is made at batch {} "
                                         "only (ORT computes float16 on the CPU through Casts, slowly)",
                                         PrecisionName(p), PrecisionName(p), data.begin()->first));
    }
    for (const auto& [batch, bd] : data) {
      if (!session.ok()) break;
      if (smallest_only && batch != data.begin()->first) continue;
      auto out = (*session)->Run(bd.inputs);
      if (!out.ok() && SkipsCpuCheck(o, fmt::format("the {} model", PrecisionName(p)), out.status(), report)) {
        m.unchecked = true;
        m.reference.clear();
        break;
      }
      if (!out.ok()) {
        m.error = out.status().WithContext(fmt::format("computing the CPU reference of the {} model at batch {}", PrecisionName(p), batch));
        break;
      }
      m.reference[batch] = std::move(out).value();
    }
    if (!session.ok()) m.error = session.status().WithContext(fmt::format("loading the {} model on the CPU", PrecisionName(p)));
    if (!m.error.ok() && !o.sweep) return m.error;
  }
  return models;
}

// Sets `base`'s precision: the provider's default when asked (or when
// nothing is), else the first asked; the other precisions asked become the
// returned sweep selection ("precision=fp32|fp16"), empty when none was.
std::vector<std::string> PrecisionAxis(const BenchOptions& o, Variant& base, BenchReport& report) {
  const std::vector<Precision> precisions = EffectivePrecisions(o);
  base.precision = DefaultPrecision(o.session.provider);
  if (!precisions.empty() && std::find(precisions.begin(), precisions.end(), base.precision) == precisions.end()) {
    base.precision = precisions.front();
  }
  if (base.precision == Precision::kFp32 && o.session.provider == Provider::kCuda) base.cuda_options["use_tf32"] = "0";
  std::vector<std::string> precision_axis;
  if (!precisions.empty()) {
    std::string values;
    for (Precision p : precisions) values += (values.empty() ? "" : "|") + std::string(PrecisionName(p));
    precision_axis.push_back("precision=" + values);
  }
  const bool tf32_asked = std::count(o.precisions.begin(), o.precisions.end(), Precision::kTf32) > 0 ||
                          std::any_of(o.sweep_axes.begin(), o.sweep_axes.end(), [](const std::string& a) {
                            return a == "precision" || (a.rfind("precision=", 0) == 0 && a.find("tf32") != std::string::npos);
                          });
  if (o.session.provider == Provider::kCpu && tf32_asked) {
    report.notes.push_back("on the CPU provider tf32 is fp32 (CPUs have no TF32): measured as fp32, once");
  }
  return precision_axis;
}

}  // namespace

Expected<BenchReport> RunBenchmark(const BenchOptions& o, const BenchHooks& hooks) {
  if (o.concurrency.empty() || *std::min_element(o.concurrency.begin(), o.concurrency.end()) < 1) {
    return InvalidArgument("--concurrency must list positive numbers of runs in flight, e.g. --concurrency 1,4");
  }
  if (o.load.iterations < 1 && o.load.duration_s <= 0) return InvalidArgument("give a positive --iterations or --duration");
  if (o.session.provider == Provider::kCuda) ORTGPU_RETURN_IF_ERROR(ValidateCudaOptions(o.session.cuda_options));
  ORTGPU_RETURN_IF_ERROR(ValidatePrecisions(o));
  if (o.request_rows < 0) return InvalidArgument("--request-rows must be 0 (the batch staged once) or a row count");
  BenchReport report;
  report.model = o.model_path;
  report.ort_version = Runtime::Get().Version();
  report.provider = o.session.provider;
  if (o.request_rows > 0) {
    report.notes.push_back(fmt::format(
        "served runs are served-shaped: each batch joined from requests of {} row{} through serve's own batch runner "
        "(rows gathered into the staging, the run, outputs split per request), as serve's worker runs them",
        o.request_rows, o.request_rows == 1 ? "" : "s"));
  }

  // The reference session: CPU, default settings. It also gives the model's
  // input metadata, so a model that cannot load fails here, once.
  SessionOptions ref_options;
  ref_options.intra_op_threads = o.session.intra_op_threads;
  ref_options.free_dimensions = o.session.free_dimensions;
  ORTGPU_ASSIGN_OR_RETURN(std::unique_ptr<Session> reference, LoadSession(o, ref_options));
  report.dynamic_batch = HasDynamicBatch(reference->inputs());
  ORTGPU_ASSIGN_OR_RETURN(std::vector<int64_t> batches, Batches(o, reference->inputs()));
  if (o.memory) std::sort(batches.begin(), batches.end());
  // Outputs after NMS, TopK or NonZero may come in another order or count
  // on another provider: compared as sets of rows (ort/row_sets.h).
  RowSets row_sets;
  if (o.check_accuracy) {
    auto graph = o.model_bytes.empty() ? onnx::ReadGraphDerivation(o.model_path) : onnx::DeriveGraph(o.model_bytes);
    row_sets = RowSetsFor(reference->outputs(), graph.ok() ? &*graph : nullptr);
    row_sets.reference_name = "the CPU reference";
  }
  std::map<int64_t, BatchData> data;
  bool cpu_cannot_run = false;
  for (int64_t b : batches) {
    BatchData bd;
    bd.row_sets = row_sets;
    ORTGPU_ASSIGN_OR_RETURN(bd.inputs, MakeInputs(reference->inputs(), o.inputs, b));
    ORTGPU_RETURN_IF_ERROR(reference->ValidateInputs(bd.inputs));
    if (o.check_accuracy && !cpu_cannot_run) {
      auto out = reference->Run(bd.inputs);
      if (!out.ok() && SkipsCpuCheck(o, "the model", out.status(), report)) {
        cpu_cannot_run = true;
      } else if (!out.ok()) {
        return out.status().WithContext("computing the CPU reference outputs at batch " + std::to_string(b));
      } else {
        bd.reference = std::move(out).value();
      }
    }
    data[b] = std::move(bd);
  }
  reference.reset();

  Variant base;
  base.io = o.io;
  base.optimization = o.session.optimization;
  base.cuda_options = o.session.cuda_options;
  if (NeedsCudaGraphOption(o.io)) base.cuda_options["enable_cuda_graph"] = "1";
  const std::vector<std::string> precision_axis = PrecisionAxis(o, base, report);
  std::vector<Variant> variants = {base};
  if (o.sweep) {
    ORTGPU_ASSIGN_OR_RETURN(variants, ExpandSweep(o.session.provider, o.sweep_axes, base, precision_axis));
  } else if (!o.sweep_axes.empty()) {
    return InvalidArgument("--sweep-axes needs --sweep");
  } else if (!precision_axis.empty()) {
    ORTGPU_ASSIGN_OR_RETURN(variants, ExpandSweep(o.session.provider, precision_axis, base));
  }
  ORTGPU_ASSIGN_OR_RETURN(auto models, PrepareModels(o, variants, data, report));
  std::unique_ptr<GpuMemoryProbe> probe;
  if (hooks.gpu_memory_probe) {
    probe = hooks.gpu_memory_probe();
  } else if (o.session.provider == Provider::kCpu) {
    probe = NewNullMemoryProbe();
  } else {
    int device = 0;
    if (auto it = o.session.cuda_options.find("device_id"); it != o.session.cuda_options.end()) device = std::atoi(it->second.c_str());
    probe = NewNvmlMemoryProbe(static_cast<unsigned>(device));
  }
  const size_t total = variants.size() * batches.size() * o.concurrency.size();
  size_t index = 0;
  Status fatal;
  for (const Variant& v : variants) {
    RunVariant(o, hooks, v, models.at(v.precision), batches, data, *probe, index, total, report, fatal);
    if (!fatal.ok()) return fatal;
  }
  for (const auto& r : report.results) {
    if (r.error.ok() && !r.stats.stable) {
      report.notes.push_back(ConfigurationLabel(r.config) + ": " + r.stats.stability_note);
    }
  }
  if (o.sweep) report.recommendation = Recommend(report);
  if (o.memory) report.memory = BuildMemoryTables(report);
  return report;
}

}  // namespace ortgpu::bench
