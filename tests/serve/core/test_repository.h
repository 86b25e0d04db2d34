// Helpers for server core tests: a temporary Triton-layout repository filled
// with tiny ONNX models built in memory, a CPU core over it, a repository
// index lookup and a blocking Infer call.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "onnx/model_builder.h"
#include "serve/model_server.h"
#include "serve/server_core.h"

namespace ortgpu::serve::testing {

// y = x * factor, elementwise, x and y float [batch, 4] (batch symbolic).
inline std::string ScaleModel(float factor) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4}, {"batch", ""});
  b.AddOutput("y", DataType::kFloat, {-1, 4}, {"batch", ""});
  // Repeated additions keep the result exact in float for small factors.
  std::string acc = "x";
  for (int i = 1; i < static_cast<int>(factor); ++i) {
    const std::string next = "acc" + std::to_string(i);
    b.AddNode("Add", {acc, "x"}, {i + 1 == static_cast<int>(factor) ? "y" : next});
    acc = next;
  }
  if (factor <= 1) b.AddNode("Identity", {"x"}, {"y"});
  return b.Serialize();
}

// ids [batch, 4] int64 -> Gather from a rows x 8 float table (its weights:
// rows x 32 bytes) -> y [batch, 4, 8].
inline std::string GatherModel(int64_t rows) {
  onnx::ModelBuilder b;
  b.AddInput("ids", DataType::kInt64, {-1, 4}, {"batch", ""});
  b.AddFloatInitializer("table", {rows, 8}, 1.0f, 7);
  b.AddNode("Gather", {"table", "ids"}, {"y"}, {{"axis", 0}});
  b.AddOutput("y", DataType::kFloat, {-1, 4, 8}, {"batch", "", ""});
  return b.Serialize();
}

class TempRepository {
 public:
  TempRepository() {
    static std::atomic<int> counter{0};
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("ortgpu-repo-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~TempRepository() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  std::string root() const { return root_.string(); }
  void WriteFile(const std::string& relative, const std::string& bytes) const {
    const auto path = root_ / relative;
    std::filesystem::create_directories(path.parent_path());
    // Written beside and renamed, so a concurrent scan never sees half a file.
    const auto tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out << bytes;
    }
    std::filesystem::rename(tmp, path);
  }
  void AddModel(const std::string& name, int version, const std::string& bytes) const {
    WriteFile(name + "/" + std::to_string(version) + "/model.onnx", bytes);
  }
  void WriteConfig(const std::string& name, const std::string& text) const { WriteFile(name + "/config.pbtxt", text); }

 private:
  std::filesystem::path root_;
};

inline Tensor Input(std::vector<float> values, std::string name = "x") {
  Tensor t = Tensor::Zeros(std::move(name), DataType::kFloat, {static_cast<int64_t>(values.size()) / 4, 4});
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

inline InferRequest Request(const std::string& model, std::vector<Tensor> inputs, const std::string& version = "") {
  InferRequest r;
  r.model_name = model;
  r.model_version = version;
  r.inputs = std::move(inputs);
  return r;
}

// Options for a core over `repo` with CPU instances; the tests call
// Rescan() themselves (the poll interval is an hour).
inline ServerOptions CpuOptions(const TempRepository& repo, ModelControlMode mode = ModelControlMode::kNone) {
  ServerOptions o;
  o.repository = repo.root();
  o.model_control = mode;
  o.poll_interval_ms = 3'600'000;  // tests call Rescan() themselves
  o.loader.default_instance_kind = InstanceKind::kCpu;
  return o;
}

inline std::unique_ptr<ServerCore> Start(ServerOptions o, ServerDeps deps = {}) {
  auto core = ServerCore::Create(std::move(o), std::move(deps));
  EXPECT_TRUE(core.ok()) << core.status().ToString();
  return core.ok() ? std::move(core).value() : nullptr;
}

inline const ModelVersionStatus* Find(const std::vector<ModelVersionStatus>& index, const std::string& name) {
  for (const auto& s : index) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

inline const ModelVersionStatus* Find(const std::vector<ModelVersionStatus>& index, const std::string& name,
                               const std::string& version) {
  for (const auto& s : index) {
    if (s.name == name && s.version == version) return &s;
  }
  return nullptr;
}

inline Expected<InferResponse> InferSync(ModelServer& server, InferRequest request) {
  std::promise<Expected<InferResponse>> promise;
  auto fut = promise.get_future();
  server.Infer(std::move(request), [&promise](Expected<InferResponse> r) { promise.set_value(std::move(r)); });
  return fut.get();
}

inline std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.element_count());
}

}  // namespace ortgpu::serve::testing
