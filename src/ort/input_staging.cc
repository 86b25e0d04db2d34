#include "ort/input_staging.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "ort/ort_status.h"
#include "ort/ort_values.h"

namespace ortgpu {

struct InputStaging::Impl {
  // The allocator the buffers came from, when it is the session's pinned
  // one. Declared before `owners` so it outlives them: each buffer is
  // freed through it when its tensor is released.
  std::unique_ptr<Ort::Allocator> pinned;
  std::vector<Ort::Value> owners;   // one max_rows tensor per input, owning its buffer
  std::vector<std::string> output_names;
};

namespace {

// A host tensor borrowing the bytes of `value` (CPU or pinned memory), which
// the returned tensor keeps alive: no copy. Strings are copied out.
Expected<Tensor> BorrowHostOutput(const std::string& name, Ort::Value value) {
  // An empty value or a sequence: ToHost says which.
  if (!value.HasValue() || !value.IsTensor() || !ort_internal::OnCpu(value.GetTensorMemoryInfo())) {
    return ort_internal::ToHost(name, value);
  }
  auto info = value.GetTensorTypeAndShapeInfo();
  if (static_cast<DataType>(info.GetElementType()) == DataType::kString) return ort_internal::ToHost(name, value);
  Tensor t;
  t.name = name;
  t.dtype = static_cast<DataType>(info.GetElementType());
  t.shape = info.GetShape();
  const size_t bytes = info.GetElementCount() * ElementSize(t.dtype);
  auto owner = std::make_shared<Ort::Value>(std::move(value));
  t.data.Borrow(owner, static_cast<const uint8_t*>(owner->GetTensorRawData()), bytes);
  return t;
}

// `value` where the session left it, as a Tensor with a DeviceView that
// keeps the value alive.
Tensor DeviceOutput(const std::string& name, Ort::Value value, int device) {
  auto info = value.GetTensorTypeAndShapeInfo();
  Tensor t;
  t.name = name;
  t.dtype = static_cast<DataType>(info.GetElementType());
  t.shape = info.GetShape();
  auto owner = std::make_shared<Ort::Value>(std::move(value));
  DeviceView view;
  view.address = reinterpret_cast<uint64_t>(owner->GetTensorRawData());
  view.size = info.GetElementCount() * ElementSize(t.dtype);
  view.device = device;
  view.where = "the run's output";
  view.owner = std::move(owner);
  t.device = std::move(view);
  return t;
}

}  // namespace

InputStaging::~InputStaging() {
  for (uint64_t b : device_buffers_) device_memory_->Free(b, device_);
}

Status InputStaging::EnsureDeviceBuffers(std::shared_ptr<DeviceMemory> memory, int device) {
  if (!device_buffers_.empty()) {
    if (memory == device_memory_ && device == device_) return Status::Ok();
    for (uint64_t b : device_buffers_) device_memory_->Free(b, device_);
    device_buffers_.clear();
  }
  device_memory_ = std::move(memory);
  device_ = device;
  for (size_t i = 0; i < specs_.size(); ++i) {
    auto b = device_memory_->Allocate(static_cast<size_t>(max_rows_) * row_bytes_[i], device);
    if (!b.ok()) {
      for (uint64_t made : device_buffers_) device_memory_->Free(made, device_);
      device_buffers_.clear();
      return b.status().WithContext("allocating the device batch buffer of input '" + specs_[i].name + "'");
    }
    device_buffers_.push_back(*b);
  }
  return Status::Ok();
}

Expected<std::unique_ptr<InputStaging>> InputStaging::Create(const Session& session, std::vector<StagedInputSpec> inputs,
                                                             int64_t max_rows) {
  std::unique_ptr<InputStaging> s(new InputStaging());
  s->max_rows_ = max_rows;
  s->impl_ = std::make_unique<Impl>();
  for (const auto& o : session.outputs()) s->impl_->output_names.push_back(o.name);
  std::vector<std::vector<int64_t>> shapes;  // each buffer's: [max_rows, row_shape...]
  for (const auto& in : inputs) {
    if (in.dtype == DataType::kString || ElementSize(in.dtype) == 0) {
      return InvalidArgument("input '" + in.name + "' holds strings, which are not staged in a batch buffer");
    }
    std::vector<int64_t> shape{max_rows};
    shape.insert(shape.end(), in.row_shape.begin(), in.row_shape.end());
    auto count = ElementCount(in.row_shape);
    if (!count || !ElementCount(shape)) {
      return InvalidArgument("input '" + in.name + "' has a row shape " + ShapeToString(in.row_shape) +
                             " that cannot be staged (a variable or too large dimension)");
    }
    s->row_bytes_.push_back(static_cast<size_t>(*count) * ElementSize(in.dtype));
    shapes.push_back(std::move(shape));
  }
  s->specs_ = std::move(inputs);
  try {
    // The CUDA EP registers a "CudaPinned" allocator with the session; ask
    // for it and fall back to ORT's CPU allocator (CPU EP, or an EP that has
    // none).
    const int device = [&] {
      auto it = session.options().cuda_options.find("device_id");
      return it == session.options().cuda_options.end() ? 0 : std::atoi(it->second.c_str());
    }();
    std::unique_ptr<Ort::Allocator>& pinned = s->impl_->pinned;
    if (session.options().provider == Provider::kCuda) {
      try {
        Ort::MemoryInfo info("CudaPinned", OrtDeviceAllocator, device, OrtMemTypeCPUOutput);
        pinned = std::make_unique<Ort::Allocator>(session.native(), info);
      } catch (const Ort::Exception&) {
        pinned.reset();  // no pinned allocator in this session: ordinary memory below
      }
    }
    Ort::AllocatorWithDefaultOptions plain;
    for (size_t i = 0; i < s->specs_.size(); ++i) {
      const auto& in = s->specs_[i];
      const auto& shape = shapes[i];
      const auto type = static_cast<ONNXTensorElementDataType>(in.dtype);
      Ort::Value v = pinned ? Ort::Value::CreateTensor(*pinned, shape.data(), shape.size(), type)
                            : Ort::Value::CreateTensor(plain, shape.data(), shape.size(), type);
      s->buffers_.push_back(static_cast<uint8_t*>(v.GetTensorMutableRawData()));
      s->impl_->owners.push_back(std::move(v));
    }
    s->pinned_ = pinned != nullptr;
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "allocating the batch buffers of model " + session.label());
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("no host memory for the batch buffers of model " + session.label() + " (" +
                             std::to_string(max_rows) + " rows); lower max_batch_size");
  }
  return s;
}

Expected<std::vector<Tensor>> InputStaging::Run(const Session& session, int64_t rows,
                                                const std::vector<std::vector<int64_t>>& shapes,
                                                const std::vector<std::string>& wanted,
                                                const std::vector<std::string>& on_device, ArenaAfterRun after) const {
  return RunOn(session, rows, shapes, wanted, on_device, /*from_device=*/false, after);
}

Expected<std::vector<Tensor>> InputStaging::RunFromDevice(const Session& session, int64_t rows,
                                                          const std::vector<std::vector<int64_t>>& shapes,
                                                          const std::vector<std::string>& wanted,
                                                          const std::vector<std::string>& on_device,
                                                          ArenaAfterRun after) const {
  if (device_buffers_.empty()) return Internal("the device batch buffers of model " + session.label() + " were not made");
  return RunOn(session, rows, shapes, wanted, on_device, /*from_device=*/true, after);
}

Expected<std::vector<Tensor>> InputStaging::RunOn(const Session& session, int64_t rows,
                                                  const std::vector<std::vector<int64_t>>& shapes,
                                                  const std::vector<std::string>& wanted,
                                                  const std::vector<std::string>& on_device, bool from_device,
                                                  ArenaAfterRun after) const {
  if (rows < 1 || rows > max_rows_) {
    return InvalidArgument("a batch of " + std::to_string(rows) + " rows does not fit the staging buffers of " +
                           std::to_string(max_rows_) + " rows");
  }
  try {
    std::vector<Ort::Value> values;
    values.reserve(specs_.size());
    // The device buffers' memory: the CUDA EP's, or the CPU's for a
    // DeviceMemory whose addresses are host memory (the tests' fake).
    // Made only for such batches: a host batch pays nothing for them.
    Ort::MemoryInfo device_info{nullptr};
    if (from_device) {
      device_info = !device_memory_->host_addressable()
                        ? Ort::MemoryInfo("Cuda", OrtDeviceAllocator, device_, OrtMemTypeDefault)
                        : Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    }
    for (size_t i = 0; i < specs_.size(); ++i) {
      std::vector<int64_t> shape;
      if (!shapes.empty()) {
        shape = shapes[i];
      } else {
        shape.push_back(rows);
        shape.insert(shape.end(), specs_[i].row_shape.begin(), specs_[i].row_shape.end());
      }
      const size_t bytes = static_cast<size_t>(rows) * row_bytes_[i];
      if (ElementCount(shape).value_or(-1) * static_cast<int64_t>(ElementSize(specs_[i].dtype)) !=
          static_cast<int64_t>(bytes)) {
        return InvalidArgument("input '" + specs_[i].name + "' shape " + ShapeToString(shape) + " does not hold " +
                               std::to_string(rows) + " staged rows");
      }
      // A view of the first `bytes` of the buffer, in the buffer's own
      // memory (pinned memory stays pinned: ORT copies it with one DMA;
      // device memory is read where it is).
      const auto type = static_cast<ONNXTensorElementDataType>(specs_[i].dtype);
      if (from_device) {
        void* at = reinterpret_cast<void*>(device_buffers_[i]);
        values.push_back(Ort::Value::CreateTensor(device_info, at, bytes, shape.data(), shape.size(), type));
      } else {
        values.push_back(Ort::Value::CreateTensor(impl_->owners[i].GetTensorMemoryInfo(), buffers_[i], bytes,
                                                  shape.data(), shape.size(), type));
      }
    }
    // Only the outputs some request of the batch asked for are fetched; ORT
    // writes each straight into host memory it allocates (pinned on CUDA),
    // and the returned tensors borrow that memory.
    std::vector<const std::string*> out_names;
    for (const auto& n : impl_->output_names) {
      if (wanted.empty() || std::find(wanted.begin(), wanted.end(), n) != wanted.end()) out_names.push_back(&n);
    }
    // CPU memory from ORT's arena: bound to pinned memory instead, every
    // batch's outputs were a fresh page-locked allocation, which cost BERT's
    // 6 MB outputs a fifth of its served throughput on the H200.
    Ort::IoBinding binding(session.native());
    for (size_t i = 0; i < specs_.size(); ++i) binding.BindInput(specs_[i].name.c_str(), values[i]);
    Ort::MemoryInfo out_memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    // Outputs left where the session makes them: the CUDA EP's device
    // memory (CPU memory for a CPU session).
    const bool cuda = session.options().provider == Provider::kCuda;
    int session_device = 0;
    Ort::MemoryInfo device_out{nullptr};  // made only when an output stays on the device
    if (!on_device.empty()) {
      if (auto it = session.options().cuda_options.find("device_id"); cuda && it != session.options().cuda_options.end()) {
        session_device = std::atoi(it->second.c_str());
      }
      device_out = cuda ? Ort::MemoryInfo("Cuda", OrtDeviceAllocator, session_device, OrtMemTypeDefault)
                        : Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    }
    auto left_on_device = [&](const std::string& n) {
      return std::find(on_device.begin(), on_device.end(), n) != on_device.end();
    };
    for (const std::string* n : out_names) binding.BindOutput(n->c_str(), left_on_device(*n) ? device_out : out_memory);
    {
      Ort::RunOptions run_options = ort_internal::PlainRunOptions(session);  // no graph capture or replay
      if (after == ArenaAfterRun::kShrink) ort_internal::ShrinkArenaAfterRun(run_options, session);
      std::shared_lock capture(ort_internal::CudaCaptureMutex());  // not while a graph is being captured
      session.native().Run(run_options, binding);
    }
    std::vector<Ort::Value> results = binding.GetOutputValues();
    std::vector<Tensor> out;
    out.reserve(results.size());
    for (size_t i = 0; i < results.size() && i < out_names.size(); ++i) {
      if (left_on_device(*out_names[i])) {
        out.push_back(DeviceOutput(*out_names[i], std::move(results[i]), cuda ? session_device : 0));
        continue;
      }
      ORTGPU_ASSIGN_OR_RETURN(Tensor t, BorrowHostOutput(*out_names[i], std::move(results[i])));
      out.push_back(std::move(t));
    }
    return out;
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "running model " + session.label());
  } catch (const std::exception& e) {
    return Internal("running model " + session.label() + ": " + e.what());
  }
}

}  // namespace ortgpu
