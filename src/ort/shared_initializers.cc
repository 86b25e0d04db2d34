#include "ort/shared_initializers.h"

#include <map>

#include <onnxruntime_cxx_api.h>

#include "onnx.pb.h"
#include "ort/ort_status.h"
#include "ort/ort_values.h"
#include "ort/tensor_proto.h"
#include "sys/file_system.h"

namespace ortgpu {
namespace {

class CudartWeightMemory : public WeightMemory {
 public:
  Expected<void*> Allocate(int device_id, size_t bytes) override { return ort_internal::CudaMalloc(device_id, bytes); }
  Status CopyFromHost(int device_id, void* dst, const void* src, size_t bytes) override {
    return ort_internal::CudaCopyToDevice(dst, src, bytes);
  }
  void Free(int device_id, void* ptr) override { ort_internal::CudaFree(device_id, ptr); }
};

std::string Megabytes(uint64_t bytes) { return std::to_string(bytes / 1000000) + " MB"; }

// The bytes of an initializer kept in an external file: its "location"
// relative to the model's folder, from "offset" for "length" bytes (the
// rest of the file without one). `need` is what its dtype and shape take.
Expected<std::string> ReadExternalData(const ::onnx::TensorProto& p, const std::string& model_path, uint64_t need) {
  std::string location;
  uint64_t offset = 0;
  uint64_t length = need;
  for (const auto& e : p.external_data()) {
    try {
      if (e.key() == "location") location = e.value();
      if (e.key() == "offset") offset = std::stoull(e.value());
      if (e.key() == "length") length = std::stoull(e.value());
    } catch (const std::exception&) {
      return InvalidArgument("initializer '" + p.name() + "' of " + model_path + " has external_data " + e.key() +
                             " '" + e.value() + "', which is not a number; re-export the model with onnx.save");
    }
  }
  const std::string what = "initializer '" + p.name() + "' of " + model_path;
  if (location.empty()) {
    return InvalidArgument(what + " keeps its data externally but names no location; re-export the model with onnx.save");
  }
  // As ORT does: the data lies in the model's folder, never outside it.
  if (location.front() == '/' || location == ".." || location.rfind("../", 0) == 0 ||
      location.find("/../") != std::string::npos) {
    return InvalidArgument(what + " keeps its data in '" + location +
                           "', outside the model's folder; ONNX Runtime reads external data only next to the model: "
                           "move the file there and give a relative location");
  }
  if (length != need) {
    return InvalidArgument(what + " has external data of length " + std::to_string(length) + " bytes but its type and shape take " +
                           std::to_string(need) + "; the model and its data file do not match: re-export them together");
  }
  const std::string file = JoinPath(DirName(model_path), location);
  if (!RealFileSystem().Exists(file)) {
    return NotFound(what + " keeps its data in external file '" + location + "', which is not next to the model (looked for " +
                    file + "); copy the data file saved with the model into that folder");
  }
  auto bytes = RealFileSystem().ReadRange(file, offset, need);
  if (!bytes.ok()) return bytes.status().WithContext("reading the external data of " + what);
  if (bytes->size() != need) {
    return Status(Code::kInvalidArgument, what + " needs " + std::to_string(need) + " bytes at offset " + std::to_string(offset) +
                                       " of external file " + file + ", which holds only " + std::to_string(bytes->size()) +
                                       " there: the file is truncated or belongs to another export; copy it again");
  }
  return std::move(bytes).value();
}

}  // namespace

WeightMemory& CudaWeightMemory() {
  static CudartWeightMemory memory;
  return memory;
}

std::string WeightsDevice::Describe() const {
  return on_gpu() ? "GPU " + std::to_string(device_id) : std::string("the CPU");
}

struct SharedInitializers::Impl {
  struct Entry {
    std::string name;
    int64_t bytes = 0;
    Tensor host;            // the bytes on the CPU
    void* device = nullptr;  // the bytes on a GPU, owned
    Ort::Value value{nullptr};
    bool offered = true;
  };
  WeightsDevice device;
  WeightMemory* memory = nullptr;
  std::vector<Entry> entries;
  std::vector<std::string> skipped;
  Ort::PrepackedWeightsContainer prepacked{nullptr};

  void Release(Entry& e) {
    if (e.device != nullptr) memory->Free(device.device_id, e.device);
    e.device = nullptr;
    e.host = Tensor();
  }
  ~Impl() {
    // Values first: they point into the buffers.
    for (auto& e : entries) e.value = Ort::Value(nullptr);
    for (auto& e : entries) Release(e);
  }
};

SharedInitializers::SharedInitializers(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SharedInitializers::~SharedInitializers() = default;

Expected<std::shared_ptr<SharedInitializers>> SharedInitializers::Load(const std::string& model_path,
                                                                       const WeightsDevice& device,
                                                                       WeightMemory* memory) {
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  impl->memory = memory != nullptr ? memory : &CudaWeightMemory();
  auto file = RealFileSystem().ReadFile(model_path);
  if (!file.ok()) return file.status().WithContext("reading the weights of " + model_path + " to share them");
  ::onnx::ModelProto model;
  if (file->size() > static_cast<size_t>(INT32_MAX) || !model.ParseFromArray(file->data(), static_cast<int>(file->size()))) {
    // Unimplemented, not InvalidArgument: ORT may still say best what is wrong with the file.
    return Unimplemented(model_path + " is not an ONNX model ortgpu can parse (" + Megabytes(file->size()) +
                         "; protobuf files stop at 2 GB, larger models keep their weights in external data files), "
                         "so its weights cannot be shared");
  }
  file = std::string();  // the proto holds its own copy
  try {
    Ort::MemoryInfo info = device.on_gpu()
                               ? Ort::MemoryInfo("Cuda", OrtDeviceAllocator, device.device_id, OrtMemTypeDefault)
                               : Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    for (const ::onnx::TensorProto& p : model.graph().initializer()) {
      const auto dtype = static_cast<DataType>(p.data_type());
      if (dtype == DataType::kString) {
        impl->skipped.push_back(p.name() + " (string tensor)");
        continue;
      }
      if (ElementSize(dtype) == 0) {
        impl->skipped.push_back(p.name() + " (element type " + std::to_string(p.data_type()) + ", which ortgpu does not read)");
        continue;
      }
      std::vector<int64_t> shape(p.dims().begin(), p.dims().end());
      const auto n = ElementCount(shape);
      if (!n) return InvalidArgument("initializer '" + p.name() + "' of " + model_path + " has an invalid shape");
      if (*n == 0) {
        impl->skipped.push_back(p.name() + " (empty)");
        continue;
      }
      Impl::Entry e;
      e.name = p.name();
      e.bytes = *n * static_cast<int64_t>(ElementSize(dtype));
      if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
        ORTGPU_ASSIGN_OR_RETURN(std::string bytes, ReadExternalData(p, model_path, static_cast<uint64_t>(e.bytes)));
        e.host.name = e.name;
        e.host.dtype = dtype;
        e.host.shape = shape;
        e.host.data.assign(bytes.begin(), bytes.end());
      } else {
        auto t = TensorFromProto(p, p.name());
        if (!t.ok()) return t.status().WithContext("initializer of " + model_path);
        e.host = std::move(t).value();
      }
      void* data = e.host.data.data();
      if (device.on_gpu()) {
        auto ptr = impl->memory->Allocate(device.device_id, static_cast<size_t>(e.bytes));
        if (!ptr.ok()) {
          return ptr.status().WithContext("placing the weights of " + model_path + " (" + e.name + ") on " +
                                          device.Describe());
        }
        e.device = *ptr;
        Status copied = impl->memory->CopyFromHost(device.device_id, e.device, data, static_cast<size_t>(e.bytes));
        if (!copied.ok()) {
          impl->memory->Free(device.device_id, e.device);
          return copied.WithContext("copying the weights of " + model_path + " to " + device.Describe());
        }
        e.host = Tensor();
        data = e.device;
      }
      // In the list before the value is made, so the memory is released
      // with the rest if ORT throws.
      impl->entries.push_back(std::move(e));
      impl->entries.back().value = Ort::Value::CreateTensor(info, data, static_cast<size_t>(impl->entries.back().bytes),
                                                            shape.data(), shape.size(),
                                                            static_cast<ONNXTensorElementDataType>(dtype));
    }
    if (!device.on_gpu()) impl->prepacked = Ort::PrepackedWeightsContainer();
  } catch (const Ort::Exception& ex) {
    return StatusFromOrt(ex, "making the shared weights of " + model_path);
  }
  return std::shared_ptr<SharedInitializers>(new SharedInitializers(std::move(impl)));
}

const WeightsDevice& SharedInitializers::device() const { return impl_->device; }

size_t SharedInitializers::count() const {
  size_t n = 0;
  for (const auto& e : impl_->entries) n += e.offered ? 1 : 0;
  return n;
}

int64_t SharedInitializers::bytes() const {
  int64_t n = 0;
  for (const auto& e : impl_->entries) n += e.offered ? e.bytes : 0;
  return n;
}

const std::vector<std::string>& SharedInitializers::skipped() const { return impl_->skipped; }

int64_t SharedInitializers::BytesOf(const std::vector<std::string>& names) const {
  std::map<std::string, int64_t> by_name;
  for (const auto& e : impl_->entries) {
    if (e.offered) by_name[e.name] = e.bytes;
  }
  int64_t n = 0;
  for (const auto& name : names) {
    if (auto it = by_name.find(name); it != by_name.end()) n += it->second;
  }
  return n;
}

void SharedInitializers::Retain(const std::set<std::string>& names) {
  for (auto& e : impl_->entries) {
    if (!e.offered || names.count(e.name) != 0) continue;
    // The value stays (an earlier session's options may still point at it;
    // ORT reads those only while creating the session) but its bytes go.
    e.offered = false;
    impl_->Release(e);
  }
}

std::vector<std::pair<std::string, const OrtValue*>> SharedInitializers::Offered() const {
  std::vector<std::pair<std::string, const OrtValue*>> out;
  for (const auto& e : impl_->entries) {
    if (e.offered) out.emplace_back(e.name, static_cast<const OrtValue*>(e.value));
  }
  return out;
}

OrtPrepackedWeightsContainer* SharedInitializers::prepacked() const {
  return impl_->prepacked ? static_cast<OrtPrepackedWeightsContainer*>(impl_->prepacked) : nullptr;
}

}  // namespace ortgpu
