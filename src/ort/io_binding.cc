#include "ort/io_binding.h"

#include <algorithm>
#include <cstring>

#include <onnxruntime_cxx_api.h>

#include "ort/batch_runner.h"
#include "ort/batching.h"
#include "ort/ort_status.h"
#include "ort/ort_values.h"
#include "ort/runtime.h"
#include "ort/staged_graph.h"
#include "sys/clock.h"

namespace ortgpu {
using ort_internal::CopyBytes;
using ort_internal::kCudaMemcpyHostToDevice;
using ort_internal::ToHost;

struct BoundRunner::Impl {
  Ort::MemoryInfo memory{nullptr};
  Ort::Allocator allocator{nullptr};  // device allocator (kResident, kCudaGraph)
  Ort::RunOptions run_options;
  Ort::IoBinding binding{nullptr};
  std::vector<Ort::Value> inputs;   // bound input values (views or device copies)
  std::vector<Ort::Value> outputs;  // preallocated outputs (kCudaGraph)
  std::vector<std::string> output_names;
};

std::string_view IoModeName(IoMode mode) {
  switch (mode) {
    case IoMode::kHost: return "host";
    case IoMode::kBound: return "bound";
    case IoMode::kResident: return "resident";
    case IoMode::kCudaGraph: return "cuda-graph";
    case IoMode::kServed: return "served";
    case IoMode::kServedGraph: return "served-graph";
  }
  return "host";
}

std::string_view NotServedReason(IoMode mode) {
  switch (mode) {
    case IoMode::kHost: return "serve stages a batch's inputs in pinned buffers, io=host copies them from pageable memory";
    case IoMode::kBound: return "serve copies every output to the host, io=bound leaves them on the device";
    case IoMode::kResident: return "serve copies each request's inputs in and outputs out, io=resident times no copies";
    case IoMode::kCudaGraph: return "serve copies each batch's inputs into the graph and its outputs out, io=cuda-graph times no copies";
    case IoMode::kServed:
    case IoMode::kServedGraph: return "";
  }
  return "";
}

Expected<IoMode> ParseIoMode(std::string_view name) {
  for (IoMode m : {IoMode::kHost, IoMode::kBound, IoMode::kResident, IoMode::kCudaGraph, IoMode::kServed,
                   IoMode::kServedGraph}) {
    if (name == IoModeName(m)) return m;
  }
  return InvalidArgument("unknown I/O mode '" + std::string(name) +
                         "'; valid: host (copy tensors every run), bound (outputs stay on the device), resident (inputs and "
                         "outputs on the device), cuda-graph (resident + CUDA graph replay), served (as `ortgpu serve` runs "
                         "a batch: pinned staged inputs, outputs to the host), served-graph (as serve runs a CUDA graph: "
                         "staged inputs copied in, replay, outputs copied out)");
}

BoundRunner::~BoundRunner() = default;

Expected<std::unique_ptr<BoundRunner>> BoundRunner::Create(const Session& session, std::vector<Tensor> inputs,
                                                           const BoundRunnerOptions& options) {
  ORTGPU_RETURN_IF_ERROR(session.ValidateInputs(inputs));
  std::unique_ptr<BoundRunner> r(new BoundRunner());
  r->session_ = &session;
  r->options_ = options;
  r->host_inputs_ = std::move(inputs);
  const SessionOptions& so = session.options();
  const bool gpu = so.provider != Provider::kCpu;
  const std::string mode_name(IoModeName(options.mode));
  if (options.mode == IoMode::kHost) {
    r->memory_ = "host";
    return r;
  }
  if (r->graph()) {
    if (!gpu) {
      return InvalidArgument("I/O mode " + mode_name + " needs --provider cuda: CUDA graphs capture GPU work, and the CPU "
                             "provider has none (with the CPU use --io host, bound, resident or served)");
    }
    if (!CapturesCudaGraphs(so)) {
      return FailedPrecondition("I/O mode " + mode_name + " needs a session built with the CUDA option enable_cuda_graph=1");
    }
  }
  if (options.request_rows < 0 || (options.request_rows > 0 && options.mode != IoMode::kServed)) {
    return InvalidArgument("request rows (" + std::to_string(options.request_rows) + ") need I/O mode served and a " +
                           "positive count; I/O mode " + mode_name + " runs the batch as one request");
  }
  if (options.request_rows > 0) {
    ORTGPU_RETURN_IF_ERROR(r->MakeServedShapedRun());
    return r;
  }
  if (ServedByServe(options.mode)) ORTGPU_RETURN_IF_ERROR(r->Stage());
  if (options.mode == IoMode::kServed) {
    r->memory_ = r->staging_->pinned() ? "host (pinned)" : "host";
    return r;
  }
  if (options.mode == IoMode::kServedGraph) {
    // serve's own code for a CUDA-graph batch, on the staged rows.
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& t : r->host_inputs_) shapes.push_back(t.shape);
    ORTGPU_ASSIGN_OR_RETURN(r->served_graph_,
                            StagedGraph::Create(session, *r->staging_, r->host_inputs_.front().shape.front(), shapes, options));
    r->memory_ = r->served_graph_->memory();
    return r;
  }
  if (options.mode != IoMode::kBound && gpu) {
    for (const auto& t : r->host_inputs_) {
      if (t.dtype == DataType::kString) {
        return InvalidArgument("input '" + t.name + "' is a string tensor, which cannot live in GPU memory; use --io host or bound");
      }
    }
  }
  int device_id = 0;
  if (auto it = so.cuda_options.find("device_id"); it != so.cuda_options.end()) device_id = std::atoi(it->second.c_str());
  r->memory_ = gpu ? "cuda:" + std::to_string(device_id) : "cpu";
  auto impl = std::make_unique<Impl>();
  try {
    // Runs of the other modes neither capture nor replay a CUDA graph.
    impl->run_options = ort_internal::PlainRunOptions(session);
    Ort::Session& native = session.native();
    impl->memory = gpu ? Ort::MemoryInfo("Cuda", OrtDeviceAllocator, device_id, OrtMemTypeDefault)
                       : Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    impl->binding = Ort::IoBinding(native);
    Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    Ort::AllocatorWithDefaultOptions host_alloc;
    const bool device_inputs = gpu && options.mode != IoMode::kBound;
    if (device_inputs) impl->allocator = Ort::Allocator(native, impl->memory);
    for (auto& t : r->host_inputs_) {
      const auto type = static_cast<ONNXTensorElementDataType>(t.dtype);
      if (device_inputs) {
        Ort::Value v = Ort::Value::CreateTensor(impl->allocator, t.shape.data(), t.shape.size(), type);
        ORTGPU_RETURN_IF_ERROR(CopyBytes(v.GetTensorMutableRawData(), t.data.data(), t.data.size(), kCudaMemcpyHostToDevice, v));
        impl->inputs.push_back(std::move(v));
      } else if (t.dtype == DataType::kString) {
        impl->inputs.push_back(ort_internal::StringTensor(host_alloc, t));
      } else {
        // A view of host_inputs_, which the runner owns and never resizes.
        impl->inputs.push_back(Ort::Value::CreateTensor(cpu, t.data.data(), t.data.size(), t.shape.data(), t.shape.size(), type));
      }
      impl->binding.BindInput(t.name.c_str(), impl->inputs.back());
    }
    for (const auto& o : session.outputs()) impl->output_names.push_back(o.name);
    if (r->graph()) {
      // Output addresses must not change between replays: learn the shapes
      // with one plain run, then preallocate the outputs on the device.
      std::vector<Tensor> shapes;
      if (!options.output_shapes.empty()) {
        if (options.output_shapes.size() != session.outputs().size()) {
          return InvalidArgument("BoundRunner needs one output shape per output of " + session.label());
        }
        for (size_t k = 0; k < options.output_shapes.size(); ++k) {
          Tensor t;
          t.name = session.outputs()[k].name;
          t.dtype = session.outputs()[k].dtype;
          t.shape = options.output_shapes[k];
          shapes.push_back(std::move(t));
        }
      } else {
        // Session::Run neither captures nor replays a graph on this session
        // (PlainRunGraphAnnotation): the runner's own runs capture its id.
        Expected<std::vector<Tensor>> learned = [&] {
          std::unique_lock capture(ort_internal::CudaCaptureMutex());
          return session.Run(r->host_inputs_);
        }();
        if (!learned.ok()) return learned.status().WithContext("learning the output shapes at " + r->Describe());
        shapes = std::move(learned).value();
      }
      for (const auto& out : shapes) {
        Ort::Value v = Ort::Value::CreateTensor(impl->allocator, out.shape.data(), out.shape.size(),
                                                static_cast<ONNXTensorElementDataType>(out.dtype));
        impl->binding.BindOutput(out.name.c_str(), v);
        impl->outputs.push_back(std::move(v));
      }
      impl->run_options = Ort::RunOptions();
      if (session.run_log_severity() >= 0) impl->run_options.SetRunLogSeverityLevel(session.run_log_severity());
      impl->run_options.AddConfigEntry("gpu_graph_id", std::to_string(options.graph_id).c_str());
    } else {
      for (const auto& name : impl->output_names) impl->binding.BindOutput(name.c_str(), impl->memory);
    }
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "binding the inputs and outputs of " + session.label() + " to " + r->memory_ + " memory");
  }
  r->impl_ = std::move(impl);
  return r;
}

std::string BoundRunner::Describe() const {
  std::string out = host_inputs_.empty() || host_inputs_.front().shape.empty()
                        ? std::string("no batch dimension")
                        : "batch " + std::to_string(host_inputs_.front().shape.front());
  if (graph()) out += ", CUDA graph id " + std::to_string(options_.graph_id);
  return out;
}

Status BoundRunner::Stage() {
  std::vector<StagedInputSpec> specs;
  int64_t rows = -1;
  for (const auto& t : host_inputs_) {
    if (t.dtype == DataType::kString || t.shape.empty() || (rows >= 0 && t.shape.front() != rows)) {
      return InvalidArgument("input '" + t.name + "' of " + session_->label() + " (" + ShapeToString(t.shape) +
                             ") cannot be staged as `ortgpu serve` stages a batch (numeric inputs sharing their first, "
                             "batch dimension); use --io host");
    }
    rows = t.shape.front();
    specs.push_back({t.name, t.dtype, std::vector<int64_t>(t.shape.begin() + 1, t.shape.end())});
  }
  if (rows < 1) return InvalidArgument(session_->label() + " has no input rows to stage; use --io host");
  ORTGPU_ASSIGN_OR_RETURN(staging_, InputStaging::Create(*session_, std::move(specs), rows));
  for (size_t i = 0; i < host_inputs_.size(); ++i) {
    if (!host_inputs_[i].data.empty()) std::memcpy(staging_->data(i), host_inputs_[i].data.data(), host_inputs_[i].data.size());
  }
  return Status::Ok();
}

Status BoundRunner::MakeServedShapedRun() {
  for (const auto& t : host_inputs_) {
    if (t.shape.empty() || t.dtype == DataType::kString) {
      return InvalidArgument("input '" + t.name + "' cannot be joined from requests (a scalar or a string tensor); " +
                             "leave out the request rows");
    }
  }
  const int64_t batch = host_inputs_.front().shape.front();
  for (int64_t begin = 0; begin < batch; begin += options_.request_rows) {
    request_row_counts_.push_back(std::min(options_.request_rows, batch - begin));
  }
  // The requests are views of the batch's rows, as serve's are views of
  // their request bodies.
  std::vector<Tensor> whole = host_inputs_;
  ORTGPU_ASSIGN_OR_RETURN(requests_, SplitBatch(whole, request_row_counts_));
  auto sessions = std::make_shared<InstanceSessions>();
  sessions->main = std::shared_ptr<const Session>(session_, [](const Session*) {});  // the caller's session
  ReshapeRules rules;
  rules.batched = true;
  rules.max_batch_size = batch;
  batch_ = std::make_unique<BatchRunner>(std::move(sessions), std::move(rules));
  ORTGPU_RETURN_IF_ERROR(Run().WithContext("a served-shaped run of " + std::to_string(requests_.size()) + " requests"));
  memory_ = batch_->staged_pinned() ? "host (pinned)" : "host";
  return Status::Ok();
}

Status BoundRunner::Run() {
  if (batch_) {
    // serve's worker on a batch of separate requests: their rows gathered
    // into the staging, the run, every output fetched and split per request.
    std::vector<const std::vector<Tensor>*> requests;
    for (const auto& req : requests_) requests.push_back(&req);
    int64_t inputs_ready_ns = 0;
    ORTGPU_ASSIGN_OR_RETURN(last_host_outputs_, batch_->RunBatch(requests, 0, RealClock(), inputs_ready_ns));
    return SplitBatch(last_host_outputs_, request_row_counts_).status();
  }
  if (served_graph_) {
    // serve's batch: the staged rows copied into the graph's fixed inputs,
    // the replay, and every output copied back, as serve fetches them.
    ORTGPU_RETURN_IF_ERROR(served_graph_->Feed(*staging_));
    ORTGPU_RETURN_IF_ERROR(served_graph_->Replay());
    ORTGPU_ASSIGN_OR_RETURN(last_host_outputs_, served_graph_->Fetch());
    return Status::Ok();
  }
  if (!impl_) {
    auto out = staging_ ? staging_->Run(*session_, host_inputs_.front().shape.front()) : session_->Run(host_inputs_);
    if (!out.ok()) return out.status();
    last_host_outputs_ = std::move(out).value();
    return Status::Ok();
  }
  return RunBound();
}

Status BoundRunner::RunBound() {
  try {
    if (graph() && graph_runs_ < kCaptureRuns) {
      // The regular runs and the capture: no other CUDA work in the process
      // meanwhile (CudaCaptureMutex).
      std::unique_lock capture(ort_internal::CudaCaptureMutex());
      ++graph_runs_;
      session_->native().Run(impl_->run_options, impl_->binding);
    } else {
      session_->native().Run(impl_->run_options, impl_->binding);
    }
    // A replay is launched on ORT's stream and may still be running: wait,
    // so the outputs read next (and the inputs written next) are this run's.
    if (graph()) ORTGPU_RETURN_IF_ERROR(ort_internal::SynchronizeDevice().WithContext(Describe()));
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "running model " + session_->label() + " with I/O mode " + std::string(IoModeName(options_.mode)) +
                                " at " + Describe());
  }
  return Status::Ok();
}

Status BoundRunner::SetInput(size_t i, const uint8_t* src, size_t bytes) {
  if (i >= host_inputs_.size() || host_inputs_[i].dtype == DataType::kString || host_inputs_[i].byte_size() != bytes) {
    return InvalidArgument("input " + std::to_string(i) + " of " + session_->label() + " is bound with another size (" +
                           std::to_string(i < host_inputs_.size() ? host_inputs_[i].byte_size() : 0) + " bytes, not " +
                           std::to_string(bytes) + ")");
  }
  if (batch_) {
    return Unimplemented("a served-shaped run joins its requests' rows on every run; its inputs are fixed");
  }
  if (staging_) {
    // The served modes: the next run takes the batch from the staging, as
    // serve's does.
    if (bytes > 0) std::memcpy(staging_->data(i), src, bytes);
    return Status::Ok();
  }
  if (impl_ && !impl_->inputs.empty() && !ort_internal::OnCpu(impl_->inputs[i].GetTensorMemoryInfo())) {
    return CopyBytes(impl_->inputs[i].GetTensorMutableRawData(), src, bytes, kCudaMemcpyHostToDevice, impl_->inputs[i]);
  }
  // Host memory: the bound value (kBound) is a view of this tensor.
  if (bytes > 0) std::memcpy(host_inputs_[i].data.data(), src, bytes);
  return Status::Ok();
}

Expected<uint64_t> BoundRunner::InputDeviceAddress(size_t i) const {
  if (!impl_ || i >= impl_->inputs.size() || ort_internal::OnCpu(impl_->inputs[i].GetTensorMemoryInfo())) {
    return Unimplemented("input " + std::to_string(i) + " of " + session_->label() + " is not bound in device memory");
  }
  return reinterpret_cast<uint64_t>(impl_->inputs[i].GetTensorRawData());
}

Expected<Tensor> BoundRunner::DeviceOutput(const std::string& name) const {
  if (impl_) {
    for (size_t i = 0; i < impl_->outputs.size() && i < impl_->output_names.size(); ++i) {
      const Ort::Value& v = impl_->outputs[i];
      if (impl_->output_names[i] != name || ort_internal::OnCpu(v.GetTensorMemoryInfo())) continue;
      auto info = v.GetTensorTypeAndShapeInfo();
      Tensor t;
      t.name = name;
      t.dtype = static_cast<DataType>(info.GetElementType());
      t.shape = info.GetShape();
      DeviceView view;
      view.address = reinterpret_cast<uint64_t>(v.GetTensorRawData());
      view.size = info.GetElementCount() * ElementSize(t.dtype);
      view.device = v.GetTensorMemoryInfo().GetDeviceId();
      view.where = "the CUDA graph's output buffer";
      t.device = std::move(view);
      return t;
    }
  }
  return Unimplemented("output '" + name + "' of " + session_->label() + " is not preallocated in device memory");
}

Expected<std::vector<Tensor>> BoundRunner::FetchOutputs(const std::vector<std::string>& wanted) {
  if (impl_) return CopyOutputsToHost(wanted);
  std::vector<Tensor> out;
  for (const auto& t : last_host_outputs_) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), t.name) != wanted.end()) out.push_back(t);
  }
  return out;
}

Expected<std::vector<Tensor>> BoundRunner::CopyOutputsToHost(const std::vector<std::string>& wanted) const {
  auto asked = [&](const std::string& name) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
  };
  // A value ORT left empty is named with this runner's batch and graph id:
  // with graphs, a sign that the run replayed a graph these outputs are not
  // bound to (another runner's id, or a capture made by a plain run).
  auto copy = [&](const std::string& name, const Ort::Value& v) -> Expected<Tensor> {
    auto t = ToHost(name, v);
    if (!t.ok()) {
      return t.status().WithContext("reading output '" + name + "' of " + session_->label() + " at " + Describe() +
                                    " (I/O mode " + std::string(IoModeName(options_.mode)) + ")");
    }
    return t;
  };
  try {
    std::vector<Tensor> out;
    if (!impl_->outputs.empty()) {
      for (size_t i = 0; i < impl_->outputs.size(); ++i) {
        if (!asked(impl_->output_names[i])) continue;
        ORTGPU_ASSIGN_OR_RETURN(Tensor t, copy(impl_->output_names[i], impl_->outputs[i]));
        out.push_back(std::move(t));
      }
      return out;
    }
    const auto names = impl_->binding.GetOutputNames();
    auto values = impl_->binding.GetOutputValues();
    for (size_t i = 0; i < values.size(); ++i) {
      if (!asked(names[i])) continue;
      ORTGPU_ASSIGN_OR_RETURN(Tensor t, copy(names[i], values[i]));
      out.push_back(std::move(t));
    }
    return out;
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "copying the outputs of " + session_->label() + " at " + Describe() + " to the host");
  }
}

}  // namespace ortgpu
