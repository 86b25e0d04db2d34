#include "precision/evaluate.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "onnx.pb.h"
#include "ort/profile.h"
#include "ort/session.h"
#include "precision/model_file.h"

namespace ortgpu::precision {
namespace {

namespace fs = std::filesystem;

// A folder under the system's temporary one, removed on destruction.
class ScratchFolder {
 public:
  ScratchFolder() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / ("ortgpu-precision-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Expected<std::unique_ptr<Session>> Load(const ::onnx::ModelProto& model, const SessionOptions& options,
                                        ScratchFolder& scratch) {
  const WriteOptions write;
  if (model.ByteSizeLong() <= write.inline_limit) {
    return Session::LoadFromBytes(model.SerializeAsString(), options, model.graph().name());
  }
  ::onnx::ModelProto copy = model;
  const std::string path = (scratch.path() / "model.onnx").string();
  ORTGPU_RETURN_IF_ERROR(WriteModelFile(copy, path, write).status());
  return Session::Load(path, options);
}

// `t` as `to` (float32 <-> float16); unchanged for any other pair.
Tensor CastFloat(Tensor t, DataType to) {
  if (t.dtype == to || t.on_device()) return t;
  Tensor out = Tensor::Zeros(t.name, to, t.shape);
  const int64_t n = t.element_count();
  if (t.dtype == DataType::kFloat && to == DataType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) out.data_as<uint16_t>()[i] = FloatToHalf(t.data_as<float>()[i]);
  } else if (t.dtype == DataType::kFloat16 && to == DataType::kFloat) {
    for (int64_t i = 0; i < n; ++i) out.data_as<float>()[i] = HalfToFloat(t.data_as<uint16_t>()[i]);
  } else {
    return t;
  }
  return out;
}

}  // namespace

Expected<std::vector<Tensor>> InterfaceCastingRunner::Run(const ::onnx::ModelProto& model,
                                                          const std::vector<Tensor>& inputs) {
  std::map<std::string, int> declared;
  for (const auto& in : model.graph().input()) declared[in.name()] = in.type().tensor_type().elem_type();
  std::vector<Tensor> cast;
  cast.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    const auto it = declared.find(t.name);
    if (it != declared.end() && it->second == ::onnx::TensorProto::FLOAT16) {
      cast.push_back(CastFloat(t, DataType::kFloat16));
    } else if (it != declared.end() && it->second == ::onnx::TensorProto::FLOAT) {
      cast.push_back(CastFloat(t, DataType::kFloat));
    } else {
      cast.push_back(t);
    }
  }
  ORTGPU_ASSIGN_OR_RETURN(auto outputs, inner_.Run(model, cast));
  for (Tensor& t : outputs) t = CastFloat(std::move(t), DataType::kFloat);
  return outputs;
}

SessionOptions Float32Reference(SessionOptions options) {
  if (options.provider == Provider::kCuda) options.cuda_options["use_tf32"] = "0";
  return options;
}

Expected<std::vector<Tensor>> OrtModelRunner::Run(const ::onnx::ModelProto& model, const std::vector<Tensor>& inputs) {
  ScratchFolder scratch;
  ORTGPU_ASSIGN_OR_RETURN(auto session, Load(model, options_, scratch));
  return session->Run(inputs);
}

Expected<std::set<std::string>> OrtPlacementObserver::OffTargetNodes(const ::onnx::ModelProto& model,
                                                                     const std::vector<Tensor>& inputs) {
  ScratchFolder scratch;
  SessionOptions options = options_;
  options.optimization = OptimizationLevel::kDisable;
  ORTGPU_ASSIGN_OR_RETURN(auto session, Load(model, options, scratch));
  ORTGPU_ASSIGN_OR_RETURN(std::string profile, session->RunProfiled(inputs, (scratch.path() / "placement").string()));
  auto events = ReadProfile(profile);
  std::remove(profile.c_str());
  ORTGPU_RETURN_IF_ERROR(events.status());
  const std::string target(OrtProviderName(options.provider));
  std::set<std::string> off;
  for (const auto& e : *events) {
    if (e.provider != target && e.op_type.rfind("Memcpy", 0) != 0) off.insert(e.node_name);
  }
  return off;
}

}  // namespace ortgpu::precision
