#include "bench/benchmark.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "bench/sweep.h"
#include "onnx/graph_derivation.h"
#include "ort/row_sets.h"
#include "ort/runtime.h"
#include "ort/session.h"
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

Expected<std::unique_ptr<Session>> LoadSession(const BenchOptions& o, const SessionOptions& so) {
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

// Runs one variant: sessions created once, then every batch x concurrency.
void RunVariant(const BenchOptions& o, const BenchHooks& hooks, const Variant& v, const std::vector<int64_t>& batches,
                const std::map<int64_t, BatchData>& data, GpuMemoryProbe& probe, size_t& index, size_t total,
                BenchReport& report, Status& fatal) {
  const int max_conc = *std::max_element(o.concurrency.begin(), o.concurrency.end());
  const int sessions_needed = o.concurrency_mode == ConcurrencyMode::kSessionPerWorker ? max_conc : 1;
  std::vector<std::unique_ptr<Session>> sessions;
  Status session_error;
  double create_ms = 0;
  for (int s = 0; s < sessions_needed && session_error.ok(); ++s) {
    SessionOptions so = SessionFor(o, v);
    if (s > 0) so.optimized_model_path.clear();
    auto loaded = LoadSession(o, so);
    if (!loaded.ok()) {
      session_error = loaded.status();
      break;
    }
    if (s == 0) create_ms = (*loaded)->load_ms();
    sessions.push_back(std::move(loaded).value());
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
      if (!bd.reference.empty()) {
        auto outputs = runners.front()->FetchOutputs();
        if (!outputs.ok()) {
          finish(outputs.status().WithContext("reading outputs for the accuracy check"));
          continue;
        }
        r.accuracy = CompareOutputs(*outputs, bd.reference, o.tolerance, bd.row_sets);
      }
      finish(Status::Ok());
    }
  }
}

}  // namespace

Expected<BenchReport> RunBenchmark(const BenchOptions& o, const BenchHooks& hooks) {
  if (o.concurrency.empty() || *std::min_element(o.concurrency.begin(), o.concurrency.end()) < 1) {
    return InvalidArgument("--concurrency must list positive numbers of runs in flight, e.g. --concurrency 1,4");
  }
  if (o.load.iterations < 1 && o.load.duration_s <= 0) return InvalidArgument("give a positive --iterations or --duration");
  if (o.session.provider == Provider::kCuda) ORTGPU_RETURN_IF_ERROR(ValidateCudaOptions(o.session.cuda_options));
  BenchReport report;
  report.model = o.model_path;
  report.ort_version = Runtime::Get().Version();
  report.provider = o.session.provider;

  // The reference session: CPU, default settings. It also gives the model's
  // input metadata, so a model that cannot load fails here, once.
  SessionOptions ref_options;
  ref_options.intra_op_threads = o.session.intra_op_threads;
  ref_options.free_dimensions = o.session.free_dimensions;
  ORTGPU_ASSIGN_OR_RETURN(std::unique_ptr<Session> reference, LoadSession(o, ref_options));
  report.dynamic_batch = HasDynamicBatch(reference->inputs());
  ORTGPU_ASSIGN_OR_RETURN(std::vector<int64_t> batches, Batches(o, reference->inputs()));
  // Outputs after NMS, TopK or NonZero may come in another order or count
  // on another provider: compared as sets of rows (ort/row_sets.h).
  RowSets row_sets;
  if (o.check_accuracy) {
    auto graph = o.model_bytes.empty() ? onnx::ReadGraphDerivation(o.model_path) : onnx::DeriveGraph(o.model_bytes);
    row_sets = RowSetsFor(reference->outputs(), graph.ok() ? &*graph : nullptr);
    row_sets.reference_name = "the CPU reference";
  }
  std::map<int64_t, BatchData> data;
  for (int64_t b : batches) {
    BatchData bd;
    bd.row_sets = row_sets;
    ORTGPU_ASSIGN_OR_RETURN(bd.inputs, MakeInputs(reference->inputs(), o.inputs, b));
    ORTGPU_RETURN_IF_ERROR(reference->ValidateInputs(bd.inputs));
    if (o.check_accuracy) {
      auto out = reference->Run(bd.inputs);
      if (!out.ok()) return out.status().WithContext("computing the CPU reference outputs at batch " + std::to_string(b));
      bd.reference = std::move(out).value();
    }
    data[b] = std::move(bd);
  }
  reference.reset();

  Variant base;
  base.io = o.io;
  base.optimization = o.session.optimization;
  base.cuda_options = o.session.cuda_options;
  if (NeedsCudaGraphOption(o.io)) base.cuda_options["enable_cuda_graph"] = "1";
  std::vector<Variant> variants = {base};
  if (o.sweep) {
    ORTGPU_ASSIGN_OR_RETURN(variants, ExpandSweep(o.session.provider, o.sweep_axes, base));
  } else if (!o.sweep_axes.empty()) {
    return InvalidArgument("--sweep-axes needs --sweep");
  }
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
    RunVariant(o, hooks, v, batches, data, *probe, index, total, report, fatal);
    if (!fatal.ok()) return fatal;
  }
  for (const auto& r : report.results) {
    if (r.error.ok() && !r.stats.stable) {
      report.notes.push_back(ConfigurationLabel(r.config) + ": " + r.stats.stability_note);
    }
  }
  if (o.sweep) report.recommendation = Recommend(report);
  return report;
}

}  // namespace ortgpu::bench
