#include "ort/shared_initializers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "onnx.pb.h"
#include "onnx/model_builder.h"
#include "ort/session.h"

namespace ortgpu {
namespace {

// y = x @ W + B: x float [batch, 4], W [4, 3] and B [3] initializers
// (written by ModelBuilder as float_data).
std::string MatMulAddModel() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4}, {"batch", ""});
  b.AddOutput("y", DataType::kFloat, {-1, 3}, {"batch", ""});
  b.AddFloatInitializer("W", {4, 3}, 1.0f, 7);
  b.AddFloatInitializer("B", {3}, 0.5f, 11);
  b.AddNode("MatMul", {"x", "W"}, {"xw"});
  b.AddNode("Add", {"xw", "B"}, {"y"});
  return b.Serialize();
}

// A folder of its own for each test's model files, removed after.
class ModelDir {
 public:
  ModelDir() {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("ortgpu-weights-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  ~ModelDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& bytes) const {
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

 private:
  std::filesystem::path dir_;
};

// The model with W moved to raw_data and B to external file `location`
// (`stored` bytes of it written there, all of B's when negative).
std::string WithRawAndExternal(const ModelDir& dir, const std::string& location, int stored = -1) {
  ::onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(MatMulAddModel()));
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    std::string bytes(static_cast<size_t>(t.float_data_size()) * 4, '\0');
    std::memcpy(bytes.data(), t.float_data().data(), bytes.size());
    t.clear_float_data();
    if (t.name() == "W") {
      t.set_raw_data(bytes);
    } else {
      t.set_data_location(::onnx::TensorProto::EXTERNAL);
      auto add = [&t](const std::string& k, const std::string& v) {
        auto* e = t.add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", location);
      add("offset", "8");
      add("length", std::to_string(bytes.size()));
      dir.Write("weights.bin", "padding!" + bytes.substr(0, stored < 0 ? bytes.size() : static_cast<size_t>(stored)));
    }
  }
  return m.SerializeAsString();
}

Tensor Input() {
  Tensor x = Tensor::Zeros("x", DataType::kFloat, {2, 4});
  for (int i = 0; i < 8; ++i) x.data_as<float>()[i] = 0.25f * static_cast<float>(i) - 1.0f;
  return x;
}

std::vector<float> RunY(const Session& s) {
  auto out = s.Run({Input()});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const Tensor& y = (*out)[0];
  return std::vector<float>(y.data_as<float>(), y.data_as<float>() + y.element_count());
}

TEST(SharedInitializersTest, SessionsSharingTheStoreAnswerAsSessionsWithTheirOwnWeights) {
  ModelDir dir;
  const std::string path = dir.Write("model.onnx", MatMulAddModel());
  auto own = Session::Load(path, {});
  ASSERT_TRUE(own.ok()) << own.status().ToString();

  auto store = SharedInitializers::Load(path, WeightsDevice{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->count(), 2u);
  EXPECT_EQ((*store)->bytes(), (12 + 3) * 4);
  EXPECT_NE((*store)->prepacked(), nullptr);  // one prepacked-weights container on the CPU
  SessionOptions so;
  so.shared_initializers = *store;
  so.log_id = "shared-test";
  auto first = Session::Load(path, so);
  auto second = Session::Load(path, so);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  store->reset();  // the sessions keep the store alive
  EXPECT_EQ(RunY(**first), RunY(**own));
  EXPECT_EQ(RunY(**second), RunY(**own));
  // ORT said it used the shared values instead of loading its own copies.
  for (const auto* s : {first->get(), second->get()}) {
    const auto& use = s->shared_initializer_use();
    EXPECT_TRUE(use.known);
    EXPECT_NE(std::find(use.used.begin(), use.used.end(), "W"), use.used.end());
    EXPECT_TRUE(use.copied.empty());
    // Created at info level to read that; its runs log at warning again.
    EXPECT_EQ(s->run_log_severity(), 2);  // ORT_LOGGING_LEVEL_WARNING
  }
  EXPECT_EQ((*own)->run_log_severity(), -1);
}

TEST(SharedInitializersTest, ReadsRawDataFloatDataAndExternalData) {
  ModelDir dir;
  const std::string typed = dir.Write("typed.onnx", MatMulAddModel());
  const std::string mixed = dir.Write("mixed.onnx", WithRawAndExternal(dir, "weights.bin"));
  auto a = SharedInitializers::Load(typed, WeightsDevice{});
  auto b = SharedInitializers::Load(mixed, WeightsDevice{});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->count(), 2u);
  EXPECT_EQ((*b)->bytes(), (*a)->bytes());
  // The external model with shared weights answers as the float_data one.
  SessionOptions so;
  so.shared_initializers = *b;
  auto shared = Session::Load(mixed, so);
  auto plain = Session::Load(typed, {});
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(RunY(**shared), RunY(**plain));
}

TEST(SharedInitializersTest, AMissingExternalDataFileNamesTheFileAndWhereItWasLookedFor) {
  ModelDir dir;
  const std::string path = dir.Write("model.onnx", WithRawAndExternal(dir, "elsewhere.bin"));
  auto store = SharedInitializers::Load(path, WeightsDevice{});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Code::kNotFound);
  const std::string& m = store.status().message();
  EXPECT_NE(m.find("initializer 'B'"), std::string::npos) << m;
  EXPECT_NE(m.find("'elsewhere.bin'"), std::string::npos) << m;
  EXPECT_NE(m.find("copy the data file"), std::string::npos) << m;
}

TEST(SharedInitializersTest, ATruncatedExternalDataFileSaysWhatWasThere) {
  ModelDir dir;
  const std::string path = dir.Write("model.onnx", WithRawAndExternal(dir, "weights.bin", 5));
  auto store = SharedInitializers::Load(path, WeightsDevice{});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Code::kInvalidArgument);
  EXPECT_NE(store.status().message().find("needs 12 bytes at offset 8"), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find("holds only 5"), std::string::npos) << store.status().message();
}

TEST(SharedInitializersTest, ExternalDataOutsideTheModelsFolderIsRefused) {
  ModelDir dir;
  const std::string path = dir.Write("model.onnx", WithRawAndExternal(dir, "../weights.bin"));
  auto store = SharedInitializers::Load(path, WeightsDevice{});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Code::kInvalidArgument);
  EXPECT_NE(store.status().message().find("outside the model's folder"), std::string::npos) << store.status().message();
}

TEST(SharedInitializersTest, StringAndEmptyInitializersAreLeftToEachSessionAndSaidSo) {
  ::onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(MatMulAddModel()));
  auto* s = m.mutable_graph()->add_initializer();
  s->set_name("labels");
  s->set_data_type(::onnx::TensorProto::STRING);
  s->add_dims(1);
  s->add_string_data("cat");
  auto* e = m.mutable_graph()->add_initializer();
  e->set_name("nothing");
  e->set_data_type(::onnx::TensorProto::FLOAT);
  e->add_dims(0);
  ModelDir dir;
  auto store = SharedInitializers::Load(dir.Write("model.onnx", m.SerializeAsString()), WeightsDevice{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->count(), 2u);
  EXPECT_EQ((*store)->skipped(), (std::vector<std::string>{"labels (string tensor)", "nothing (empty)"}));
}

// GPU memory as host memory, counting what is live.
class FakeGpuMemory : public WeightMemory {
 public:
  Expected<void*> Allocate(int device_id, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (full_) return ResourceExhausted("out of GPU memory");
    devices_.push_back(device_id);
    void* p = ::operator new(bytes);
    live_[p] = bytes;
    return p;
  }
  Status CopyFromHost(int, void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  void Free(int, void* ptr) override {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(ptr);
    ::operator delete(ptr);
  }
  size_t live_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [p, b] : live_) n += b;
    return n;
  }
  std::vector<int> devices_;
  bool full_ = false;

 private:
  std::mutex mu_;
  std::map<void*, size_t> live_;
};

TEST(SharedInitializersTest, OnAGpuTheStoreOwnsDeviceMemoryAndRetainFreesWhatNoSessionUsed) {
  ModelDir dir;
  const std::string path = dir.Write("model.onnx", MatMulAddModel());
  FakeGpuMemory gpu;
  {
    auto store = SharedInitializers::Load(path, WeightsDevice{Provider::kCuda, 1}, &gpu);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ(gpu.live_bytes(), 60u);
    EXPECT_EQ(gpu.devices_, (std::vector<int>{1, 1}));
    EXPECT_EQ((*store)->prepacked(), nullptr);  // ORT prepacks on the CPU only
    EXPECT_EQ((*store)->device().Describe(), "GPU 1");
    (*store)->Retain({"W"});
    EXPECT_EQ((*store)->count(), 1u);
    EXPECT_EQ(gpu.live_bytes(), 48u);
    ASSERT_EQ((*store)->Offered().size(), 1u);
    EXPECT_EQ((*store)->Offered()[0].first, "W");
  }
  EXPECT_EQ(gpu.live_bytes(), 0u);
}

TEST(SharedInitializersTest, AFullGpuIsResourceExhaustedNamingTheModelAndTheGpu) {
  ModelDir dir;
  const std::string path = dir.Write("model.onnx", MatMulAddModel());
  FakeGpuMemory gpu;
  gpu.full_ = true;
  auto store = SharedInitializers::Load(path, WeightsDevice{Provider::kCuda, 0}, &gpu);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Code::kResourceExhausted);
  EXPECT_NE(store.status().message().find("on GPU 0"), std::string::npos) << store.status().message();
}

}  // namespace
}  // namespace ortgpu
