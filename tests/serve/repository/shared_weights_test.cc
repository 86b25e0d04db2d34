// The loader's weight sharing (config parameter share_weights): one store
// per model and device, given to every session made there.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "onnx.pb.h"
#include "onnx/model_builder.h"
#include "serve/core/test_repository.h"
#include "serve/repository/model_loader.h"

namespace ortgpu::serve {
namespace {

using ortgpu::testing::FakeClock;
using testing::TempRepository;

// y = x @ W: x and y float [batch, 4], W a [4, 4] initializer.
std::string MatMulModel() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4}, {"batch", ""});
  b.AddOutput("y", DataType::kFloat, {-1, 4}, {"batch", ""});
  b.AddFloatInitializer("W", {4, 4}, 1.0f, 3);
  b.AddNode("MatMul", {"x", "W"}, {"y"});
  return b.Serialize();
}

// MatMulModel with W's data in external file `location`.
std::string MatMulModelWithExternalW(const std::string& location) {
  ::onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(MatMulModel()));
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value(location);
  return m.SerializeAsString();
}

struct Sharing {
  Expected<std::shared_ptr<LoadedModel>> model = Status(Internal("not loaded"));
  std::vector<WeightsDevice> stores_made;                    // what the weights factory was asked for
  std::map<int, std::vector<const SharedInitializers*>> by_gpu;  // the store each session got, by device_id
};

// Loads version 1 of `name` whose GPU instances get CPU sessions (no GPU
// here) and CPU-memory stores, recording which store each session got.
// `unavailable_first`: the first store asked for fails Unavailable, as
// with a CUDA runtime that only the CUDA EP can load.
Sharing LoadRecordingStores(const TempRepository& repo, const std::string& name, InstanceKind kind,
                            bool unavailable_first = false) {
  auto source = ModelRepository::FromDirectory(repo.root()).ReadModel(name);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  auto parsed = ParseModelConfig(source->config_text, source->config_path);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  Sharing out;
  FakeClock clock;
  LoaderOptions options;
  options.default_instance_kind = kind;
  LoaderDeps deps;
  deps.clock = &clock;
  deps.session_factory = [&out](const std::string& path, const SessionOptions& so) {
    const int gpu = so.provider == Provider::kCuda ? std::stoi(so.cuda_options.at("device_id")) : -1;
    out.by_gpu[gpu].push_back(so.shared_initializers.get());
    SessionOptions cpu = so;
    cpu.provider = Provider::kCpu;
    cpu.cuda_options.clear();
    return Session::Load(path, cpu);
  };
  deps.weights_factory = [&out, unavailable_first](const std::string& path,
                                                   const WeightsDevice& device) -> Expected<std::shared_ptr<SharedInitializers>> {
    out.stores_made.push_back(device);
    if (unavailable_first && out.stores_made.size() == 1) return Unavailable("libcudart is not loaded");
    return SharedInitializers::Load(path, WeightsDevice{});
  };
  out.model = LoadModelVersion(*source, parsed->config, 1, options, deps);
  return out;
}

constexpr const char* kTwoGpus = R"pb(
  max_batch_size: 8
  dynamic_batching { preferred_batch_size: [ 2, 4 ] }
  instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0 ] }, { count: 1 kind: KIND_GPU gpus: [ 1 ] } ]
)pb";
constexpr const char* kShareOn = R"pb(
  parameters { key: "share_weights" value { string_value: "on" } }
)pb";

TEST(SharedWeightsTest, EverySessionOfAModelOnOneGpuGetsTheSameStoreAndEachGpuItsOwn) {
  TempRepository repo;
  repo.AddModel("m", 1, MatMulModel());
  repo.WriteConfig("m", std::string(kTwoGpus) + kShareOn);
  Sharing s = LoadRecordingStores(repo, "m", InstanceKind::kGpu);
  ASSERT_TRUE(s.model.ok()) << s.model.status().ToString();
  ASSERT_EQ(s.stores_made.size(), 2u);  // one per GPU, not one per session
  EXPECT_EQ(s.stores_made[0].device_id, 0);
  EXPECT_EQ(s.stores_made[1].device_id, 1);
  // 2 instances x (main + batch-1 (light, issue 25) + batch-2 + batch-4 sessions)
  ASSERT_EQ(s.by_gpu[0].size(), 8u);
  ASSERT_EQ(s.by_gpu[1].size(), 4u);
  EXPECT_NE(s.by_gpu[0][0], nullptr);
  for (const auto* store : s.by_gpu[0]) EXPECT_EQ(store, s.by_gpu[0][0]);
  for (const auto* store : s.by_gpu[1]) EXPECT_EQ(store, s.by_gpu[1][0]);
  EXPECT_NE(s.by_gpu[0][0], s.by_gpu[1][0]);
  const auto& lines = (*s.model)->weights;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("weights: 1 initializer, 64 bytes, one copy on GPU 0 shared by 8 sessions (saved 448 bytes)"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("one copy on GPU 1 shared by 4 sessions"), std::string::npos) << lines[1];
}

TEST(SharedWeightsTest, AStoreTheCudaRuntimeCouldNotMakeBeforeTheFirstSessionIsMadeAfterIt) {
  TempRepository repo;
  repo.AddModel("m", 1, MatMulModel());
  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 2, 4 ] }
    instance_group [ { count: 1 kind: KIND_GPU } ]
  )pb" + std::string(kShareOn));
  Sharing s = LoadRecordingStores(repo, "m", InstanceKind::kGpu, /*unavailable_first=*/true);
  ASSERT_TRUE(s.model.ok()) << s.model.status().ToString();
  ASSERT_EQ(s.stores_made.size(), 2u);  // before the first session, and once after it
  ASSERT_EQ(s.by_gpu[0].size(), 4u);  // main, and batch 1 (light), 2 and 4
  EXPECT_EQ(s.by_gpu[0][0], nullptr);
  EXPECT_NE(s.by_gpu[0][1], nullptr);
  EXPECT_EQ(s.by_gpu[0][2], s.by_gpu[0][1]);
  EXPECT_EQ(s.by_gpu[0][3], s.by_gpu[0][1]);
  ASSERT_EQ((*s.model)->weights.size(), 1u);
  EXPECT_NE((*s.model)->weights[0].find("shared by 3 sessions and 1 made before it existed"), std::string::npos)
      << (*s.model)->weights[0];
}

// auto (the default) on a GPU makes the copy at the device's second
// session: the first keeps its own, the rest share.
TEST(SharedWeightsTest, AutoOnAGpuSharesFromTheDevicesSecondSession) {
  TempRepository repo;
  repo.AddModel("m", 1, MatMulModel());
  repo.WriteConfig("m", kTwoGpus);
  Sharing s = LoadRecordingStores(repo, "m", InstanceKind::kGpu);
  ASSERT_TRUE(s.model.ok()) << s.model.status().ToString();
  ASSERT_EQ(s.stores_made.size(), 2u);  // one per GPU, each after that GPU's first session
  ASSERT_EQ(s.by_gpu[0].size(), 8u);
  EXPECT_EQ(s.by_gpu[0][0], nullptr);
  EXPECT_NE(s.by_gpu[0][1], nullptr);
  for (size_t k = 2; k < s.by_gpu[0].size(); ++k) EXPECT_EQ(s.by_gpu[0][k], s.by_gpu[0][1]);
  ASSERT_EQ(s.by_gpu[1].size(), 4u);
  EXPECT_EQ(s.by_gpu[1][0], nullptr);
  EXPECT_NE(s.by_gpu[1][1], nullptr);
  EXPECT_EQ(s.by_gpu[1][2], s.by_gpu[1][1]);
  const auto& lines = (*s.model)->weights;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("one copy on GPU 0 shared by 7 sessions and 1 with a copy of its own (the device's first: "
                          "auto shares from the second)"),
            std::string::npos)
      << lines[0];
}

// A model with one session on its GPU makes no shared copy and says nothing.
TEST(SharedWeightsTest, AutoMakesNoCopyForAGpusOnlySession) {
  TempRepository repo;
  repo.AddModel("m", 1, MatMulModel());
  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    instance_group [ { count: 1 kind: KIND_GPU } ]
  )pb");
  Sharing s = LoadRecordingStores(repo, "m", InstanceKind::kGpu);
  ASSERT_TRUE(s.model.ok()) << s.model.status().ToString();
  EXPECT_TRUE(s.stores_made.empty());
  ASSERT_EQ(s.by_gpu[0].size(), 1u);
  EXPECT_EQ(s.by_gpu[0][0], nullptr);
  EXPECT_TRUE((*s.model)->weights.empty());
}

TEST(SharedWeightsTest, ShareWeightsOffGivesEverySessionItsOwnWeights) {
  TempRepository repo;
  repo.AddModel("m", 1, MatMulModel());
  repo.WriteConfig("m", std::string(kTwoGpus) + R"pb(
    parameters { key: "share_weights" value { string_value: "off" } }
  )pb");
  Sharing s = LoadRecordingStores(repo, "m", InstanceKind::kGpu);
  ASSERT_TRUE(s.model.ok()) << s.model.status().ToString();
  EXPECT_TRUE(s.stores_made.empty());
  for (const auto& [gpu, stores] : s.by_gpu) {
    for (const auto* store : stores) EXPECT_EQ(store, nullptr);
  }
  EXPECT_TRUE((*s.model)->weights.empty());
}

TEST(SharedWeightsTest, CpuInstancesShareOneCopyAndSayWhatItSaved) {
  TempRepository repo;
  repo.AddModel("m", 1, MatMulModel());
  repo.WriteConfig("m", R"pb(
    max_batch_size: 4
    instance_group [ { count: 3 kind: KIND_CPU } ]
  )pb");
  Sharing s = LoadRecordingStores(repo, "m", InstanceKind::kCpu);
  ASSERT_TRUE(s.model.ok()) << s.model.status().ToString();
  ASSERT_EQ(s.stores_made.size(), 1u);
  EXPECT_FALSE(s.stores_made[0].on_gpu());
  ASSERT_EQ((*s.model)->weights.size(), 1u);
  // ORT used W in each of the 3 sessions: two copies (2 x 64 bytes) saved.
  EXPECT_EQ((*s.model)->weights[0], "weights: 1 initializer, 64 bytes, one copy on the CPU shared by 3 sessions (saved 128 bytes)");
  ASSERT_EQ((*s.model)->shared_weights.size(), 1u);
  EXPECT_EQ((*s.model)->shared_weights[0]->count(), 1u);
}

TEST(SharedWeightsTest, AMissingExternalDataFileMakesTheModelUnavailableSayingWhichFile) {
  TempRepository repo;
  repo.AddModel("m", 1, MatMulModelWithExternalW("model.onnx.data"));
  repo.WriteConfig("m", "max_batch_size: 4\ninstance_group [ { kind: KIND_CPU } ]\n");
  auto source = ModelRepository::FromDirectory(repo.root()).ReadModel("m");
  ASSERT_TRUE(source.ok());
  auto parsed = ParseModelConfig(source->config_text, source->config_path);
  ASSERT_TRUE(parsed.ok());
  FakeClock clock;
  LoaderDeps deps;
  deps.clock = &clock;
  deps.session_factory = RealSessionFactory();
  deps.weights_factory = RealWeightsFactory();
  auto model = LoadModelVersion(*source, parsed->config, 1, LoaderOptions{}, deps);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), Code::kNotFound);
  const std::string& msg = model.status().message();
  EXPECT_NE(msg.find("model 'm'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("external file 'model.onnx.data'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("copy the data file saved with the model into that folder"), std::string::npos) << msg;
}

TEST(SharedWeightsTest, TheServerListsAModelWithAShortExternalDataFileAsUnavailableWithTheReason) {
  TempRepository repo;
  repo.AddModel("short", 1, MatMulModelWithExternalW("weights.bin"));
  repo.WriteFile("short/1/weights.bin", "12345678");  // W takes 64 bytes
  repo.AddModel("good", 1, MatMulModel());
  auto core = testing::Start(testing::CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  auto index = core->RepositoryIndex(false);
  ASSERT_NE(testing::Find(index, "good"), nullptr);
  EXPECT_EQ(testing::Find(index, "good")->state, ModelState::kReady);
  const ModelVersionStatus* bad = testing::Find(index, "short");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->state, ModelState::kUnavailable);
  EXPECT_NE(bad->reason.find("needs 64 bytes at offset 0 of external file"), std::string::npos) << bad->reason;
  EXPECT_NE(bad->reason.find("holds only 8 there"), std::string::npos) << bad->reason;
}

TEST(SharedWeightsTest, AnUnknownShareWeightsValueNamesTheParameterAndTheValidValues) {
  EXPECT_EQ(*ParseShareWeights(""), ShareWeights::kAuto);
  EXPECT_EQ(*ParseShareWeights("on"), ShareWeights::kOn);
  EXPECT_EQ(*ParseShareWeights("false"), ShareWeights::kOff);
  auto bad = ParseShareWeights("sometimes");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("share_weights is 'sometimes'; valid: auto"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::serve
