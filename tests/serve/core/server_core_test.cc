#include "serve/server_core.h"

#include <gtest/gtest.h>

#include <thread>

#include "ort/session.h"
#include "serve/core/test_repository.h"

namespace ortgpu::serve {
namespace {

using testing::Floats;
using testing::Input;
using testing::InferSync;
using testing::Request;
using testing::ScaleModel;
using testing::TempRepository;

ServerOptions CpuOptions(const TempRepository& repo, ModelControlMode mode = ModelControlMode::kNone) {
  ServerOptions o;
  o.repository = repo.root();
  o.model_control = mode;
  o.poll_interval_ms = 3'600'000;  // tests call Rescan() themselves
  o.loader.default_instance_kind = InstanceKind::kCpu;
  return o;
}

std::unique_ptr<ServerCore> Start(ServerOptions o, ServerDeps deps = {}) {
  auto core = ServerCore::Create(std::move(o), std::move(deps));
  EXPECT_TRUE(core.ok()) << core.status().ToString();
  return core.ok() ? std::move(core).value() : nullptr;
}

const ModelVersionStatus* Find(const std::vector<ModelVersionStatus>& index, const std::string& name) {
  for (const auto& s : index) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(ServerCoreTest, ACorruptModelIsUnavailableWithTheReasonWhileAGoodOneServes) {
  TempRepository repo;
  repo.AddModel("good", 1, ScaleModel(2));
  repo.AddModel("broken", 1, "this is not an ONNX model");
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  auto index = core->RepositoryIndex(false);
  ASSERT_NE(Find(index, "good"), nullptr);
  EXPECT_EQ(Find(index, "good")->state, ModelState::kReady);
  ASSERT_NE(Find(index, "broken"), nullptr);
  EXPECT_EQ(Find(index, "broken")->state, ModelState::kUnavailable);
  EXPECT_NE(Find(index, "broken")->reason.find("loading"), std::string::npos) << Find(index, "broken")->reason;
  EXPECT_TRUE(core->IsLive());
  EXPECT_FALSE(core->IsReady());

  auto r = InferSync(*core, Request("good", {Input({1, 2, 3, 4})}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model_version, "1");
  EXPECT_EQ(Floats(r->outputs[0]), (std::vector<float>{2, 4, 6, 8}));

  auto bad = InferSync(*core, Request("broken", {Input({1, 2, 3, 4})}));
  EXPECT_EQ(bad.status().code(), Code::kUnavailable);
  EXPECT_EQ(InferSync(*core, Request("nope", {Input({1, 2, 3, 4})})).status().code(), Code::kNotFound);
  EXPECT_EQ(InferSync(*core, Request("good", {Input({1, 2, 3, 4})}, "7")).status().code(), Code::kNotFound);
  EXPECT_EQ(core->IsModelReady("broken", "").value_or(true), false);
}

TEST(ServerCoreTest, BadRequestsGetInvalidArgumentNamingTheProblem) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  auto expect_invalid = [&](std::vector<Tensor> inputs, const std::string& words) {
    auto r = InferSync(*core, Request("m", std::move(inputs)));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
  };
  Tensor wrong_type = Tensor::Zeros("x", DataType::kDouble, {1, 4});
  expect_invalid({wrong_type}, "datatype FP64");
  expect_invalid({Tensor::Zeros("x", DataType::kFloat, {1, 5})}, "dimension 1 must be 4");
  expect_invalid({Tensor::Zeros("x", DataType::kFloat, {9, 4})}, "max_batch_size");
  expect_invalid({}, "missing input 'x'");
  expect_invalid({Input({1, 2, 3, 4}), Input({1, 2, 3, 4}, "z")}, "unexpected input 'z'");
  Tensor short_data = Input({1, 2, 3, 4});
  short_data.data.resize(8);
  expect_invalid({short_data}, "x");
}

TEST(ServerCoreTest, MetadataConfigAndStatisticsUseTritonsShapes) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  auto md = core->Metadata("m", "");
  ASSERT_TRUE(md.ok());
  EXPECT_EQ(md->versions, (std::vector<std::string>{"1"}));
  ASSERT_EQ(md->inputs.size(), 1u);
  EXPECT_EQ(md->inputs[0].datatype, "FP32");
  EXPECT_EQ(md->inputs[0].shape, (std::vector<int64_t>{-1, 4}));
  auto config = core->ModelConfig("m", "1");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ((*config)["name"], "m");
  EXPECT_EQ((*config)["max_batch_size"], 4);
  ASSERT_TRUE(InferSync(*core, Request("m", {Input({1, 2, 3, 4})})).ok());
  auto stats = core->Statistics("", "");
  ASSERT_TRUE(stats.ok());
  const auto& s = (*stats)["model_stats"][0];
  EXPECT_EQ(s["name"], "m");
  EXPECT_EQ(s["version"], "1");
  EXPECT_EQ(s["inference_count"], 1);
  EXPECT_EQ(s["inference_stats"]["success"]["count"], 1);
  EXPECT_EQ(core->Statistics("zzz", "").status().code(), Code::kNotFound);
}

TEST(ServerCoreTest, AFailingWarmupKeepsTheModelUnavailable) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 4
    model_warmup [ { name: "bad" batch_size: 1
      inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 5 ] zero_data: true } } } ]
  )pb");
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  const auto index = core->RepositoryIndex(false);
  auto st = Find(index, "m");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->state, ModelState::kUnavailable);
  EXPECT_NE(st->reason.find("warm-up"), std::string::npos) << st->reason;
}

TEST(ServerCoreTest, ConcurrentRequestsAreBatchedAndGiveTheSameOutputsAsSingleRuns) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(3));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 60000000 }
  )pb");
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  auto single = Session::Load(repo.root() + "/m/1/model.onnx", {});
  ASSERT_TRUE(single.ok());

  std::vector<Tensor> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back(Input({0.1f * i, 1.5f, -2.25f * i, 1e-3f}));
  std::vector<std::promise<Expected<InferResponse>>> promises(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      core->Infer(Request("m", {inputs[i]}), [&, i](Expected<InferResponse> r) { promises[i].set_value(std::move(r)); });
    });
  }
  for (auto& c : clients) c.join();
  for (int i = 0; i < 4; ++i) {
    auto r = promises[i].get_future().get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto expected = (*single)->Run({inputs[i]});
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(r->outputs[0].shape, (std::vector<int64_t>{1, 4}));
    EXPECT_EQ(r->outputs[0].data, (*expected)[0].data) << "request " << i;
  }
  auto loaded = core->FindLoaded("m", "1");
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(loaded->stats->BatchSizes(), (std::map<int64_t, uint64_t>{{4, 1}}));
  auto stats = core->Statistics("m", "1");
  EXPECT_EQ((*stats)["model_stats"][0]["batch_stats"][0]["batch_size"], 4);
}

TEST(ServerCoreTest, ExplicitModeLoadsAndUnloadsOnRequest) {
  TempRepository repo;
  repo.AddModel("a", 1, ScaleModel(2));
  repo.AddModel("b", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo, ModelControlMode::kExplicit));
  ASSERT_NE(core, nullptr);
  EXPECT_TRUE(core->RepositoryIndex(/*ready_only=*/true).empty());
  ASSERT_NE(Find(core->RepositoryIndex(false), "a"), nullptr);
  EXPECT_EQ(InferSync(*core, Request("a", {Input({1, 2, 3, 4})})).status().code(), Code::kNotFound);

  ASSERT_TRUE(core->LoadModel("a").ok());
  EXPECT_TRUE(core->IsModelReady("a", "1").value_or(false));
  EXPECT_TRUE(InferSync(*core, Request("a", {Input({1, 2, 3, 4})})).ok());
  EXPECT_EQ(core->LoadModel("missing").code(), Code::kNotFound);

  ASSERT_TRUE(core->UnloadModel("a").ok());
  EXPECT_FALSE(core->IsModelReady("a", "").value_or(true));
  EXPECT_EQ(Find(core->RepositoryIndex(false), "a")->reason, "unloaded");
  EXPECT_FALSE(InferSync(*core, Request("a", {Input({1, 2, 3, 4})})).ok());

  TempRepository other;
  other.AddModel("a", 1, ScaleModel(2));
  auto none = Start(CpuOptions(other));
  EXPECT_EQ(none->LoadModel("a").code(), Code::kFailedPrecondition);
  EXPECT_EQ(none->UnloadModel("a").code(), Code::kFailedPrecondition);
}

TEST(ServerCoreTest, PollSwapsInANewVersionUnderLoadWithoutFailingRequests) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo, ModelControlMode::kPoll));
  ASSERT_NE(core, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, ok{0}, from_v2{0};
  std::mutex mu;
  std::string first_failure;
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      while (!stop) {
        auto r = InferSync(*core, Request("m", {Input({1, 1, 1, 1})}));
        if (!r.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (failures++ == 0) first_failure = r.status().ToString();
          continue;
        }
        ++ok;
        if (r->model_version == "2") {
          ++from_v2;
          EXPECT_EQ(Floats(r->outputs[0])[0], 3.0f);
        }
      }
    });
  }
  repo.AddModel("m", 2, ScaleModel(3));
  ASSERT_TRUE(core->Rescan().ok());
  // Keep the load on until version 2 has answered (the guard only bounds a failure).
  for (int i = 0; i < 100000 && from_v2 < 20; ++i) std::this_thread::yield();
  stop = true;
  for (auto& c : clients) c.join();
  EXPECT_EQ(failures, 0) << first_failure;
  EXPECT_GE(from_v2, 1);
  auto index = core->RepositoryIndex(false);
  ASSERT_EQ(index.size(), 1u);
  EXPECT_EQ(index[0].version, "2");
  EXPECT_EQ(index[0].state, ModelState::kReady);
}

TEST(ServerCoreTest, SingleModelFileIsServedAsVersionOne) {
  TempRepository repo;
  repo.WriteFile("resnet.onnx", ScaleModel(2));
  ServerOptions o;
  o.model_file = repo.root() + "/resnet.onnx";
  o.loader.default_instance_kind = InstanceKind::kCpu;
  auto core = Start(o);
  ASSERT_NE(core, nullptr);
  EXPECT_TRUE(core->IsReady());
  auto r = InferSync(*core, Request("resnet", {Input({1, 2, 3, 4})}, "1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ServerOptions missing = o;
  missing.model_file = repo.root() + "/nope.onnx";
  EXPECT_EQ(ServerCore::Create(missing).status().code(), Code::kNotFound);
}

// Loads every "GPU" instance on the CPU and remembers what it was asked for.
struct RecordingFactory {
  std::vector<SessionOptions> asked;
  std::mutex mu;
  SessionFactory Make() {
    return [this](const std::string& path, const SessionOptions& o) {
      {
        std::lock_guard<std::mutex> lock(mu);
        asked.push_back(o);
      }
      SessionOptions cpu = o;
      cpu.provider = Provider::kCpu;
      return Session::Load(path, cpu);
    };
  }
};

class FallbackPlacement : public PlacementChecker {
 public:
  Status CheckGpuPlacement(const Session&, const std::vector<Tensor>&) const override {
    return FailedPrecondition("require_gpu: 1 compute node(s) fell back to the CPU: /Add (Add)");
  }
};

TEST(ServerCoreTest, RequireGpuMakesAModelWithCpuFallbackUnavailable) {
  TempRepository repo;
  repo.AddModel("gpu", 1, ScaleModel(2));
  repo.WriteConfig("gpu", R"pb(
    instance_group [ { count: 2 kind: KIND_GPU gpus: [ 1 ] } ]
    optimization { execution_accelerators { gpu_execution_accelerator [
      { name: "cuda" parameters { key: "cudnn_conv_algo_search" value: "HEURISTIC" } } ] } }
  )pb");
  repo.AddModel("strict", 1, ScaleModel(2));
  repo.WriteConfig("strict", R"pb(
    instance_group [ { kind: KIND_GPU } ]
    parameters { key: "require_gpu" value { string_value: "true" } }
  )pb");
  repo.AddModel("cpu_only", 1, ScaleModel(2));
  repo.WriteConfig("cpu_only", R"pb(
    instance_group [ { kind: KIND_CPU } ]
    parameters { key: "require_gpu" value { string_value: "true" } }
  )pb");
  RecordingFactory factory;
  FallbackPlacement placement;
  ServerDeps deps;
  deps.session_factory = factory.Make();
  deps.placement = &placement;
  auto core = Start(CpuOptions(repo), deps);
  ASSERT_NE(core, nullptr);
  auto index = core->RepositoryIndex(false);
  EXPECT_EQ(Find(index, "gpu")->state, ModelState::kReady);
  EXPECT_EQ(Find(index, "strict")->state, ModelState::kUnavailable);
  EXPECT_NE(Find(index, "strict")->reason.find("fell back to the CPU"), std::string::npos);
  EXPECT_EQ(Find(index, "cpu_only")->state, ModelState::kUnavailable);
  EXPECT_NE(Find(index, "cpu_only")->reason.find("KIND_CPU"), std::string::npos) << Find(index, "cpu_only")->reason;
  int gpu_sessions = 0;
  for (const auto& o : factory.asked) {
    if (o.log_id != "gpu") continue;
    ++gpu_sessions;
    EXPECT_EQ(o.provider, Provider::kCuda);
    EXPECT_EQ(o.cuda_options.at("device_id"), "1");
    EXPECT_EQ(o.cuda_options.at("cudnn_conv_algo_search"), "HEURISTIC");
  }
  EXPECT_EQ(gpu_sessions, 2);
}

TEST(ServerCoreTest, ShutdownFinishesAndThenRefuses) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  core->Shutdown();
  EXPECT_FALSE(core->IsLive());
  EXPECT_EQ(InferSync(*core, Request("m", {Input({1, 2, 3, 4})})).status().code(), Code::kUnavailable);
}

}  // namespace
}  // namespace ortgpu::serve
