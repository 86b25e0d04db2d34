#include "doctor/observe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "onnx/graph_derivation.h"
#include "onnx/model_builder.h"
#include "ort/accuracy.h"
#include "ort/profile.h"
#include "ort/random_inputs.h"
#include "ort/row_sets.h"
#include "ort/runtime.h"
#include "sys/file_system.h"

namespace ortgpu::doctor {
namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Calls `sample` on its own thread at once and then every `period_ms` until
// destroyed: NVML readings taken while the GPU works. The wait is the
// sampling period, not synchronisation: Stop() wakes it at once.
class LoadSampler {
 public:
  LoadSampler(const std::function<void()>& sample, int period_ms) {
    if (!sample) return;
    thread_ = std::thread([this, sample, period_ms] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!stop_) {
        lock.unlock();
        sample();
        lock.lock();
        cv_.wait_for(lock, std::chrono::milliseconds(period_ms), [this] { return stop_; });
      }
    });
  }
  ~LoadSampler() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

RunTiming Time(const Session& s, const std::vector<Tensor>& inputs, const ObserveOptions& o,
               std::vector<Tensor>* outputs, const std::function<void()>* sample_under_load = nullptr) {
  RunTiming t;
  double start = NowMs();
  auto first = s.Run(inputs);
  t.first_run_ms = NowMs() - start;
  if (!first.ok()) {
    t.error = first.status().message();
    return t;
  }
  if (outputs) *outputs = std::move(first).value();
  for (int i = 0; i < o.warmup_runs; ++i) (void)s.Run(inputs).ok();
  const bool sampling = sample_under_load != nullptr && *sample_under_load;
  const double load_start = NowMs();
  LoadSampler sampler(sampling ? *sample_under_load : std::function<void()>(), o.sample_period_ms);
  std::vector<double> samples;
  for (int i = 0; i < o.timed_runs; ++i) {
    start = NowMs();
    auto r = s.Run(inputs);
    samples.push_back(NowMs() - start);
    if (!r.ok()) {
      t.error = r.status().message();
      return t;
    }
  }
  // A few timed runs of a small model are over before the clocks ramp up:
  // keep the GPU busy (untimed) until the sampler has seen a load window.
  while (sampling && NowMs() - load_start < o.load_window_ms) {
    if (!s.Run(inputs).ok()) break;
  }
  std::sort(samples.begin(), samples.end());
  t.median_ms = samples.empty() ? 0 : samples[samples.size() / 2];
  t.runs = static_cast<int>(samples.size());
  t.ok = true;
  return t;
}

SessionOptions CudaOptions(const ObserveOptions& o) {
  SessionOptions so;
  so.provider = Provider::kCuda;
  so.cuda_options = o.cuda_options;
  so.cuda_options["device_id"] = std::to_string(o.device_id);
  return so;
}

// Loads the model from `path` (or `bytes`) with `options`, asking the session
// to save its optimised graph into `graph_file`. Saving serves placement
// only: a session that fails with it is created again without.
Expected<std::unique_ptr<Session>> LoadSavingGraph(const std::string* path, const std::string& bytes,
                                                   const std::string& label, const SessionOptions& options,
                                                   const SavedGraph& graph_file) {
  SessionOptions saving = options;
  graph_file.Request(saving);
  auto s = path ? Session::Load(*path, saving) : Session::LoadFromBytes(bytes, saving, label);
  if (s.ok()) return s;
  return path ? Session::Load(*path, options) : Session::LoadFromBytes(bytes, options, label);
}

void ObserveRuns(const std::string* path, const std::string& bytes, const std::string& label,
                 const std::vector<Tensor>& inputs, const Session& cpu, bool cuda, const ObserveOptions& o,
                 EndToEndObservation& obs, std::unique_ptr<Session> cuda_session, std::vector<OrtLogRecord> logs,
                 const std::function<void()>* sample_under_load = nullptr) {
  std::vector<Tensor> ref, got;
  obs.cpu = Time(cpu, inputs, o, &ref);
  if (!cuda) return;
  // The CUDA session saves the graph ORT optimised: placement traces what
  // each CPU node reads over it, and it names the outputs after NMS.
  SavedGraph graph_file(o.temp_dir);
  if (!cuda_session) {
    SessionOptions so = CudaOptions(o);
    so.log_severity = 1;
    Runtime::Get().SetLogSeverity(1);
    LogCapture capture;
    auto s = LoadSavingGraph(path, bytes, label, so, graph_file);
    Runtime::Get().SetLogSeverity(2);
    logs = capture.Records();
    if (!s.ok()) {
      obs.cuda = RunTiming{};
      obs.cuda->error = s.status().message();
      return;
    }
    cuda_session = std::move(s).value();
  }
  std::optional<onnx::GraphDerivation> graph;
  if (const std::string& saved = cuda_session->options().optimized_model_path; !saved.empty()) {
    auto read = onnx::ReadGraphDerivation(saved);
    if (read.ok()) graph = std::move(read).value();
  }
  obs.cuda = Time(*cuda_session, inputs, o, &got, sample_under_load);
  if (obs.cuda->ok && obs.cpu.ok) {
    Tolerance tolerance;
    tolerance.rtol = obs.tolerance;
    // Detections after NMS may come in another order or count (ort/row_sets.h).
    RowSets rows = RowSetsFor(cpu.outputs(), graph ? &*graph : nullptr);
    rows.actual_name = "CUDA";
    rows.reference_name = "CPU";
    const Accuracy acc = CompareOutputs(got, ref, tolerance, rows);
    obs.max_abs_diff = acc.max_abs_error;
    obs.max_rel_diff = acc.max_rel_error;
    obs.agreement_note = acc.passed ? "" : acc.note;
    obs.row_set_notes = acc.row_set_notes;
  }
  if (o.gpu_memory) obs.gpu_memory_bytes = o.gpu_memory();
  if (obs.cuda->ok) {
    auto placement = ProfilePlacement(*cuda_session, inputs, o.temp_dir, logs, graph ? &*graph : nullptr);
    if (placement.ok()) obs.placement = std::move(placement).value();
  }
}

}  // namespace

Expected<std::vector<Tensor>> MakeInputs(const Session& session, const ObserveOptions& options,
                                         std::vector<std::string>* described, std::vector<std::string>* defaulted) {
  // Only the flags naming this model's inputs or symbolic dims apply to it.
  const ShapeFlags mine = ShapeFlagsFor(session.inputs(), options.shapes);
  ORTGPU_RETURN_IF_ERROR(CheckShapeFlags(session.inputs(), mine));
  std::vector<Tensor> out;
  for (const auto& in : session.inputs()) {
    if (!in.is_tensor) return Unimplemented("input '" + in.name + "' is not a tensor; doctor can only feed tensors");
    if (auto given = options.inputs.find(in.name); given != options.inputs.end()) {
      const Tensor& t = given->second;
      if (t.dtype != in.dtype) {
        return InvalidArgument("--input " + in.name + " holds " + std::string(ShortName(t.dtype)) +
                               " but the model expects " + std::string(ShortName(in.dtype)));
      }
      ORTGPU_RETURN_IF_ERROR(CheckShapeFits(in, t.shape, "--input " + in.name));
      if (described) described->push_back(fmt::format("{}: {} {} (from --input)", in.name, ShortName(in.dtype),
                                                      ShapeToString(t.shape)));
      out.push_back(t);
      continue;
    }
    const bool flagged = mine.count(in.name) > 0 || std::any_of(in.dim_names.begin(), in.dim_names.end(),
                                                                [&](const std::string& d) { return mine.count(d) > 0; });
    ORTGPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveInputShape(in, mine, UnsizedDims{1, 1}, defaulted));
    ORTGPU_RETURN_IF_ERROR(CheckInputSize(in.name, in.dtype, shape, "--shape"));
    if (!ElementCount(shape)) return InvalidArgument("input '" + in.name + "' shape " + ShapeToString(shape) + " is too large");
    Tensor t = Tensor::Zeros(in.name, in.dtype, shape);
    // Integers 0 or 1 unless --int-range says otherwise: index inputs of
    // unknown models (Gather on a table of any size) stay in range.
    const auto range = options.int_ranges.find(in.name);
    FillRandom(t, 1234 + out.size(), range != options.int_ranges.end() ? range->second : IntRange{0, 2});
    if (described) {
      described->push_back(fmt::format("{}: {} {}{}", in.name, ShortName(in.dtype), ShapeToString(shape),
                                       flagged ? " (from --shape)" : ""));
    }
    out.push_back(std::move(t));
  }
  return out;
}

RuntimeObservation ObserveRuntime(bool gpu_expected, const ObserveOptions& o) {
  RuntimeObservation r;
  Runtime& rt = Runtime::Get();
  auto& p = r.provider;
  p.ort_version = rt.Version();
  p.ort_library = rt.LibraryPath();
  p.available_providers = rt.AvailableProviders();
  p.ep_devices = rt.EpDevices();
  const std::string ep = JoinPath(DirName(p.ort_library), "libonnxruntime_providers_cuda.so");
  if (RealFileSystem().Exists(ep)) p.ep_library = RealFileSystem().RealPath(ep);
  p.gpu_expected = gpu_expected;

  const std::string model = onnx::BuiltinCheckModel();
  auto& e2e = r.end_to_end;
  e2e.model_label = fmt::format("built-in check model (2 Conv + 2 MatMul, batch {}, 3x64x64)", o.builtin_batch);
  auto cpu = Session::LoadFromBytes(model, SessionOptions{}, "built-in check model");
  if (!cpu.ok()) {
    e2e.cpu.error = cpu.status().message();
    return r;
  }
  ObserveOptions builtin;
  builtin.shapes = {{"image", {o.builtin_batch, 3, 64, 64}}};
  auto inputs = MakeInputs(**cpu, builtin, nullptr, nullptr);
  if (!inputs.ok()) {
    e2e.cpu.error = inputs.status().message();
    return r;
  }

  std::unique_ptr<Session> cuda;
  std::vector<OrtLogRecord> cuda_logs;
  SavedGraph graph_file(o.temp_dir);  // read by ObserveRuns
  if (gpu_expected) {
    p.attempted = true;
    SessionOptions so = CudaOptions(o);
    so.disable_cpu_ep_fallback = true;
    so.log_severity = 1;
    rt.SetLogSeverity(1);  // ORT's placement notes go to the default logger
    LogCapture logs;
    const double start = NowMs();
    auto s = LoadSavingGraph(nullptr, model, "built-in check model", so, graph_file);
    p.session_ms = NowMs() - start;
    rt.SetLogSeverity(2);
    cuda_logs = logs.Records();
    p.log = ClassifyOrtLog(cuda_logs);
    if (s.ok()) {
      cuda = std::move(s).value();
    } else {
      p.session_error = s.status().message();
      ClassifyOrtMessage(p.session_error, p.log);
    }
  }
  const bool run_cuda = gpu_expected && cuda != nullptr;
  if (!run_cuda) {
    e2e.skip_reason = gpu_expected ? "the CUDA session could not be created (provider.cuda_session)"
                                   : "no usable GPU (driver layer)";
  }
  ObserveRuns(nullptr, model, "built-in check model", *inputs, **cpu, run_cuda, o, e2e, std::move(cuda),
              std::move(cuda_logs), &o.sample_under_load);
  return r;
}

TensorRtRun ObserveTensorRtSession(const ObserveOptions& o) {
  TensorRtRun out;
  const std::string model = onnx::BuiltinCheckModel();
  SessionOptions so;
  so.provider = Provider::kTensorRt;
  const double start = NowMs();
  auto s = Session::LoadFromBytes(model, so, "built-in check model (TensorRT)");
  out.session_ms = NowMs() - start;
  if (!s.ok()) {
    out.error = s.status().message();
    return out;
  }
  ObserveOptions builtin;
  builtin.shapes = {{"image", {o.builtin_batch, 3, 64, 64}}};
  auto inputs = MakeInputs(**s, builtin, nullptr, nullptr);
  if (!inputs.ok()) {
    out.error = inputs.status().message();
    return out;
  }
  const double run_start = NowMs();
  auto r = (*s)->Run(*inputs);
  out.run_ms = NowMs() - run_start;
  if (!r.ok()) out.error = r.status().message();
  return out;
}

ModelObservation ObserveModel(const std::string& path, bool cuda, const ObserveOptions& o) {
  ModelObservation m;
  m.path = path;
  m.run.model_label = path;
  if (Status file = CheckRegularFile(path, "model"); !file.ok()) {
    m.load_error = file.code() == Code::kNotFound ? "no such file: " + path : file.message();
    return m;
  }
  auto cpu = Session::Load(path, SessionOptions{});
  if (!cpu.ok()) {
    m.load_error = cpu.status().message();
    return m;
  }
  for (const auto& in : (*cpu)->inputs()) {
    m.input_names.push_back(in.name);
    for (const auto& d : in.dim_names) {
      if (!d.empty()) m.input_names.push_back(d);
    }
  }
  auto inputs = MakeInputs(**cpu, o, &m.input_shapes, &m.defaulted_dims);
  if (!inputs.ok()) {
    m.input_error = inputs.status().message();
    return m;
  }
  if (!cuda) m.run.skip_reason = "no working CUDA execution provider (provider layer)";
  ObserveRuns(&path, "", path, *inputs, **cpu, cuda, o, m.run, nullptr, {});
  return m;
}

}  // namespace ortgpu::doctor
