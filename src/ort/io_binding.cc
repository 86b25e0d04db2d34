#include "ort/io_binding.h"

#include <algorithm>
#include <cstring>

#include <onnxruntime_cxx_api.h>

#include "ort/ort_status.h"
#include "ort/ort_values.h"
#include "ort/runtime.h"

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
  }
  return "host";
}

Expected<IoMode> ParseIoMode(std::string_view name) {
  for (IoMode m : {IoMode::kHost, IoMode::kBound, IoMode::kResident, IoMode::kCudaGraph}) {
    if (name == IoModeName(m)) return m;
  }
  return InvalidArgument("unknown I/O mode '" + std::string(name) +
                         "'; valid: host (copy tensors every run), bound (outputs stay on the device), resident (inputs and "
                         "outputs on the device), cuda-graph (resident + CUDA graph replay)");
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
  if (options.mode == IoMode::kHost) {
    r->memory_ = "host";
    return r;
  }
  if (options.mode == IoMode::kCudaGraph) {
    if (!gpu) {
      return InvalidArgument("I/O mode cuda-graph needs --provider cuda: CUDA graphs capture GPU work, and the CPU provider has "
                             "none (with the CPU use --io host, bound or resident)");
    }
    auto it = so.cuda_options.find("enable_cuda_graph");
    if (it == so.cuda_options.end() || it->second != "1") {
      return FailedPrecondition("I/O mode cuda-graph needs a session built with the CUDA option enable_cuda_graph=1");
    }
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
  if (session.run_log_severity() >= 0) impl->run_options.SetRunLogSeverityLevel(session.run_log_severity());
  try {
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
    if (options.mode == IoMode::kCudaGraph) {
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
        Expected<std::vector<Tensor>> learned = [&] {
          std::unique_lock capture(ort_internal::CudaCaptureMutex());
          return session.Run(r->host_inputs_);
        }();
        ORTGPU_ASSIGN_OR_RETURN(shapes, std::move(learned));
      }
      for (const auto& out : shapes) {
        Ort::Value v = Ort::Value::CreateTensor(impl->allocator, out.shape.data(), out.shape.size(),
                                                static_cast<ONNXTensorElementDataType>(out.dtype));
        impl->binding.BindOutput(out.name.c_str(), v);
        impl->outputs.push_back(std::move(v));
      }
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

Status BoundRunner::Run() {
  if (!impl_) {
    auto out = session_->Run(host_inputs_);
    if (!out.ok()) return out.status();
    last_host_outputs_ = std::move(out).value();
    return Status::Ok();
  }
  try {
    if (options_.mode == IoMode::kCudaGraph && graph_runs_ < kCaptureRuns) {
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
    if (options_.mode == IoMode::kCudaGraph) ORTGPU_RETURN_IF_ERROR(ort_internal::SynchronizeDevice());
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "running model " + session_->label() + " with I/O mode " + std::string(IoModeName(options_.mode)));
  }
  return Status::Ok();
}

Status BoundRunner::SetInput(size_t i, const uint8_t* src, size_t bytes) {
  if (i >= host_inputs_.size() || host_inputs_[i].dtype == DataType::kString || host_inputs_[i].byte_size() != bytes) {
    return InvalidArgument("input " + std::to_string(i) + " of " + session_->label() + " is bound with another size (" +
                           std::to_string(i < host_inputs_.size() ? host_inputs_[i].byte_size() : 0) + " bytes, not " +
                           std::to_string(bytes) + ")");
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
  auto asked = [&](const std::string& name) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
  };
  if (!impl_) {
    std::vector<Tensor> out;
    for (const auto& t : last_host_outputs_) {
      if (asked(t.name)) out.push_back(t);
    }
    return out;
  }
  try {
    std::vector<Tensor> out;
    if (!impl_->outputs.empty()) {
      for (size_t i = 0; i < impl_->outputs.size(); ++i) {
        if (!asked(impl_->output_names[i])) continue;
        ORTGPU_ASSIGN_OR_RETURN(Tensor t, ToHost(impl_->output_names[i], impl_->outputs[i]));
        out.push_back(std::move(t));
      }
      return out;
    }
    const auto names = impl_->binding.GetOutputNames();
    auto values = impl_->binding.GetOutputValues();
    for (size_t i = 0; i < values.size(); ++i) {
      if (!asked(names[i])) continue;
      ORTGPU_ASSIGN_OR_RETURN(Tensor t, ToHost(names[i], values[i]));
      out.push_back(std::move(t));
    }
    return out;
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "copying the outputs of " + session_->label() + " to the host");
  }
}

}  // namespace ortgpu
