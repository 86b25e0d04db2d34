#include "serve/server_core.h"

#include <gtest/gtest.h>

#include "serve/protocol/statistics_json.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <new>
#include <thread>
#include <utility>
#include <vector>

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
using testing::CpuOptions;
using testing::Find;
using testing::Start;

// One thread stops at Enter() until the test calls Release(); the test
// learns it got there with WaitEntered(). Used once.
class Gate {
 public:
  void Enter() {
    std::unique_lock<std::mutex> lock(mu_);
    entered_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
  }
  void WaitEntered() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false;
  bool released_ = false;
};

// The real clock, except that one NowNanos call stops at a Gate: the first
// one made on `thread` (HoldNextCallOn), or on any thread but `thread`
// (HoldNextCallOffThread). The scheduler reads the clock at known points
// (DynamicBatcher::Enqueue before it checks for a stop, Execute before a
// run), so a test can hold a request exactly there.
class GateClock : public Clock {
 public:
  int64_t NowNanos() const override {
    bool hold = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (armed_ && (std::this_thread::get_id() == thread_) == on_thread_) {
        armed_ = false;
        hold = true;
      }
    }
    if (hold) gate_.Enter();
    return RealClock().NowNanos();
  }
  void HoldNextCallOn(std::thread::id thread) { Arm(thread, true); }
  void HoldNextCallOffThread(std::thread::id thread) { Arm(thread, false); }
  Gate& gate() const { return gate_; }

 private:
  void Arm(std::thread::id thread, bool on_thread) {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    thread_ = thread;
    on_thread_ = on_thread;
  }
  mutable std::mutex mu_;
  mutable bool armed_ = false;
  std::thread::id thread_;
  bool on_thread_ = true;
  mutable Gate gate_;
};

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
  auto unknown = InferSync(*core, Request("nope", {Input({1, 2, 3, 4})}));
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  // Triton's wording (its clients and tests read it), then ortgpu's hint.
  EXPECT_EQ(unknown.status().message().rfind("Request for unknown model: 'nope' is not found; the server has: ", 0), 0u)
      << unknown.status().message();
  auto no_version = InferSync(*core, Request("good", {Input({1, 2, 3, 4})}, "7"));
  EXPECT_EQ(no_version.status().code(), Code::kNotFound);
  EXPECT_EQ(no_version.status().message().rfind("Request for unknown model: 'good' version 7 is not found", 0), 0u)
      << no_version.status().message();
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
  EXPECT_EQ(config->name(), "m");
  EXPECT_EQ(config->max_batch_size(), 4);
  ASSERT_TRUE(InferSync(*core, Request("m", {Input({1, 2, 3, 4})})).ok());
  auto stats = core->Statistics("", "");
  ASSERT_TRUE(stats.ok());
  const auto json = protocol::StatisticsToJson(*stats);
  const auto& s = json["model_stats"][0];
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
  EXPECT_EQ(protocol::StatisticsToJson(*stats)["model_stats"][0]["batch_stats"][0]["batch_size"], 4);
}

TEST(ServerCoreTest, StatisticsFileBatchesUnderTheRowsTheyRanPaddingIncluded) {
  TempRepository repo;
  repo.AddModel("padded", 1, ScaleModel(2));
  repo.WriteConfig("padded", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 4, 8 ] }
    parameters { key: "pad_to_preferred_batch_size" value { string_value: "true" } }
  )pb");
  // Regression (issue 8): without dynamic_batching a request of 8 rows was
  // filed under batch_size 1.
  repo.AddModel("plain", 1, ScaleModel(2));
  repo.WriteConfig("plain", "max_batch_size: 8\n");
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  auto three = InferSync(*core, Request("padded", {Input({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})}));
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(three->outputs[0].shape, (std::vector<int64_t>{3, 4}));  // the padding row is not returned
  EXPECT_EQ(Floats(three->outputs[0]), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24}));
  ASSERT_TRUE(InferSync(*core, Request("plain", {Input(std::vector<float>(32, 1.0f))})).ok());

  auto stats = core->Statistics("padded", "1");
  ASSERT_TRUE(stats.ok());
  const auto padded = protocol::StatisticsToJson(*stats)["model_stats"][0];
  EXPECT_EQ(padded["inference_count"], 3);
  ASSERT_EQ(padded["batch_stats"].size(), 1u);
  EXPECT_EQ(padded["batch_stats"][0]["batch_size"], 4);
  stats = core->Statistics("plain", "1");
  ASSERT_TRUE(stats.ok());
  const auto plain = protocol::StatisticsToJson(*stats)["model_stats"][0];
  EXPECT_EQ(plain["inference_count"], 8);
  ASSERT_EQ(plain["batch_stats"].size(), 1u);
  EXPECT_EQ(plain["batch_stats"][0]["batch_size"], 8);
  // Warm-up ran every size each batcher can execute.
  // (Padded: the preferred sizes and the light sizes 1 and 2, issue 25.)
  EXPECT_EQ(core->FindLoaded("padded", "1")->warmup.batch_sizes, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(core->FindLoaded("plain", "1")->warmup.batch_sizes.size(), 8u);
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

// Records the calls about versions' precision (what the metrics show of a
// load) in order, as "precision m/1 fp32" and "unloaded m/1".
class VersionEvents : public SchedulerObserver {
 public:
  void OnModelPrecision(const std::string& model, const std::string& version,
                        const PrecisionFigures& figures) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back("precision " + model + "/" + version + " " + figures.precision);
  }
  void OnVersionUnloaded(const std::string& model, const std::string& version) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back("unloaded " + model + "/" + version);
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(events_, {});
  }

 private:
  std::mutex mu_;
  std::vector<std::string> events_;
};

TEST(ServerCoreTest, Issue26ObserverHearsEachLoadsPrecisionAndEachVersionThatLeaves) {
  TempRepository repo;
  const std::string fp32 = "parameters { key: \"precision\" value: { string_value: \"fp32\" } }\n";
  repo.AddModel("a", 1, ScaleModel(2));
  repo.WriteConfig("a", fp32);
  repo.AddModel("p", 1, ScaleModel(2));
  repo.WriteConfig("p", fp32);
  VersionEvents events;
  ServerDeps deps;
  deps.observer = &events;
  auto core = Start(CpuOptions(repo, ModelControlMode::kExplicit), deps);
  ASSERT_NE(core, nullptr);
  ASSERT_TRUE(core->LoadModel("a").ok());
  ASSERT_TRUE(core->LoadModel("p").ok());
  EXPECT_EQ(events.Take(), (std::vector<std::string>{"precision a/1 fp32", "precision p/1 fp32"}));

  // Unloaded on request.
  ASSERT_TRUE(core->UnloadModel("a").ok());
  EXPECT_EQ(events.Take(), (std::vector<std::string>{"unloaded a/1"}));

  // Version 2 replaces version 1 (latest 1); a reload without precision says so.
  repo.AddModel("p", 2, ScaleModel(2));
  repo.WriteConfig("p", "");
  ASSERT_TRUE(core->LoadModel("p").ok());
  EXPECT_EQ(events.Take(), (std::vector<std::string>{"precision p/2 ", "unloaded p/1"}));
  core->Shutdown();
  EXPECT_EQ(events.Take(), (std::vector<std::string>{"unloaded p/2"}));
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
  // 2 instances x (the main session, padded batches; one each for the
  // light sizes 1 and 2 an idle instance runs unpadded, issue 25).
  EXPECT_EQ(gpu_sessions, 6);
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

// Regression: a poll that landed between `mkdir m/2` and the copy of
// model.onnx made version 2 UNAVAILABLE for good and unloaded version 1 (the
// latest-1 policy no longer wanted it): the model answered 503 until someone
// edited config.pbtxt.
TEST(ServerCoreTest, PollRetriesANewVersionCaughtHalfCopiedAndKeepsTheOldOneServingMeanwhile) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo, ModelControlMode::kPoll));
  ASSERT_NE(core, nullptr);
  auto expect_served_by = [&](const std::string& version, float first, const std::string& step) {
    auto r = InferSync(*core, Request("m", {Input({1, 2, 3, 4})}));
    ASSERT_TRUE(r.ok()) << step << ": " << r.status().ToString();
    EXPECT_EQ(r->model_version, version) << step;
    EXPECT_EQ(Floats(r->outputs[0])[0], first) << step;
  };

  std::filesystem::create_directories(repo.root() + "/m/2");  // mkdir m/2, not copied yet
  EXPECT_TRUE(core->Rescan().ok());
  auto index = core->RepositoryIndex(false);
  ASSERT_NE(Find(index, "m", "1"), nullptr);
  EXPECT_EQ(Find(index, "m", "1")->state, ModelState::kReady);
  ASSERT_NE(Find(index, "m", "2"), nullptr);
  EXPECT_EQ(Find(index, "m", "2")->state, ModelState::kUnavailable);
  EXPECT_NE(Find(index, "m", "2")->reason.find("has no model file"), std::string::npos) << Find(index, "m", "2")->reason;
  expect_served_by("1", 2.0f, "empty version folder");

  const std::string v2 = ScaleModel(3);
  repo.WriteFile("m/2/model.onnx", v2.substr(0, v2.size() / 2));  // half copied
  EXPECT_TRUE(core->Rescan().ok());
  index = core->RepositoryIndex(false);
  ASSERT_NE(Find(index, "m", "2"), nullptr);
  EXPECT_EQ(Find(index, "m", "2")->state, ModelState::kUnavailable);
  EXPECT_EQ(Find(index, "m", "1")->state, ModelState::kReady);
  expect_served_by("1", 2.0f, "half-copied model file");

  repo.AddModel("m", 2, v2);  // the copy finished: the next poll loads it, then version 1 leaves
  EXPECT_TRUE(core->Rescan().ok());
  index = core->RepositoryIndex(false);
  ASSERT_EQ(index.size(), 1u);
  EXPECT_EQ(index[0].version, "2");
  EXPECT_EQ(index[0].state, ModelState::kReady);
  EXPECT_EQ(index[0].reason, "");
  expect_served_by("2", 3.0f, "complete copy");
  EXPECT_TRUE(core->IsReady());
}

// Regression: a reload that failed stopped the version that was serving.
TEST(ServerCoreTest, AFailedReloadKeepsThePreviousLoadServingAndTheIndexSaysWhy) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", "max_batch_size: 4\n");
  auto core = Start(CpuOptions(repo, ModelControlMode::kPoll));
  ASSERT_NE(core, nullptr);

  // An edit whose warm-up cannot run: the reload of version 1 fails.
  repo.WriteConfig("m", R"pb(
    max_batch_size: 4
    model_warmup [ { name: "bad" batch_size: 1
      inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 5 ] zero_data: true } } } ]
  )pb");
  EXPECT_TRUE(core->Rescan().ok());
  for (int poll = 0; poll < 2; ++poll) {  // the retry on the next poll fails the same way
    auto index = core->RepositoryIndex(false);
    ASSERT_EQ(index.size(), 1u);
    EXPECT_EQ(index[0].version, "1");
    EXPECT_EQ(index[0].state, ModelState::kReady);
    EXPECT_NE(index[0].reason.find("reloading failed"), std::string::npos) << index[0].reason;
    EXPECT_NE(index[0].reason.find("warm-up"), std::string::npos) << index[0].reason;
    EXPECT_TRUE(core->IsModelReady("m", "1").value_or(false));
    auto r = InferSync(*core, Request("m", {Input({1, 2, 3, 4})}, "1"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Floats(r->outputs[0]), (std::vector<float>{2, 4, 6, 8}));
    EXPECT_TRUE(core->Rescan().ok());
  }

  // Fixed config and a new model file: the reload succeeds and the reason goes.
  repo.AddModel("m", 1, ScaleModel(3));
  repo.WriteConfig("m", "max_batch_size: 4\n# fixed\n");
  EXPECT_TRUE(core->Rescan().ok());
  auto index = core->RepositoryIndex(false);
  ASSERT_EQ(index.size(), 1u);
  EXPECT_EQ(index[0].state, ModelState::kReady);
  EXPECT_EQ(index[0].reason, "");
  auto r = InferSync(*core, Request("m", {Input({1, 2, 3, 4})}, "1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats(r->outputs[0]), (std::vector<float>{3, 6, 9, 12}));
}

// Regression: a request for an explicit version that resolved the old load
// just before a reload swapped it got "is unloading" (503) although the new
// load of the same version was READY.
TEST(ServerCoreTest, ARequestForAnExplicitVersionRacingItsReloadRunsOnTheNewLoad) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", "max_batch_size: 4\n");
  GateClock clock;
  ServerDeps deps;
  deps.clock = &clock;
  auto core = Start(CpuOptions(repo, ModelControlMode::kPoll), deps);
  ASSERT_NE(core, nullptr);
  const auto old_load = core->FindLoaded("m", "1");
  std::promise<Expected<InferResponse>> answer;
  std::thread client([&] {
    clock.HoldNextCallOn(std::this_thread::get_id());
    core->Infer(Request("m", {Input({1, 2, 3, 4})}, "1"),
                [&](Expected<InferResponse> r) { answer.set_value(std::move(r)); });
  });
  clock.gate().WaitEntered();  // resolved the old version 1, stopped inside Enqueue

  repo.WriteConfig("m", "max_batch_size: 4\n# edited\n");
  EXPECT_TRUE(core->Rescan().ok());  // reloads version 1 and stops the old load
  EXPECT_NE(core->FindLoaded("m", "1"), old_load);
  clock.gate().Release();
  client.join();
  auto r = answer.get_future().get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model_version, "1");
  EXPECT_EQ(Floats(r->outputs[0]), (std::vector<float>{2, 4, 6, 8}));
}

// Regression: an exception thrown while loading (std::bad_alloc) escaped the
// start-up or poll thread and aborted the server.
TEST(ServerCoreTest, ALoadThatThrowsMakesOnlyItsVersionUnavailable) {
  TempRepository repo;
  repo.AddModel("good", 1, ScaleModel(2));
  repo.AddModel("greedy", 1, ScaleModel(2));
  std::atomic<int> greedy_attempts{0};
  ServerDeps deps;
  deps.session_factory = [&](const std::string& path, const SessionOptions& o) -> Expected<std::unique_ptr<Session>> {
    if (o.log_id == "greedy") {
      ++greedy_attempts;
      throw std::bad_alloc();
    }
    return Session::Load(path, o);
  };
  auto core = Start(CpuOptions(repo, ModelControlMode::kPoll), deps);
  ASSERT_NE(core, nullptr);
  for (int poll = 0; poll < 2; ++poll) {
    auto index = core->RepositoryIndex(false);
    ASSERT_NE(Find(index, "greedy"), nullptr);
    EXPECT_EQ(Find(index, "greedy")->state, ModelState::kUnavailable);
    EXPECT_NE(Find(index, "greedy")->reason.find("bad_alloc"), std::string::npos) << Find(index, "greedy")->reason;
    EXPECT_EQ(Find(index, "good")->state, ModelState::kReady);
    EXPECT_TRUE(InferSync(*core, Request("good", {Input({1, 2, 3, 4})})).ok());
    EXPECT_EQ(InferSync(*core, Request("greedy", {Input({1, 2, 3, 4})})).status().code(), Code::kUnavailable);
    EXPECT_TRUE(core->Rescan().ok());  // retried on the poll, and caught again
  }
  EXPECT_EQ(greedy_attempts, 3);
  EXPECT_TRUE(core->IsLive());
}

// Regression: fixed config dims or a model_warmup count large enough to
// exhaust memory threw from Tensor::Zeros on the loading thread.
TEST(ServerCoreTest, AbsurdWarmupSizesAreAConfigErrorNotACrash) {
  TempRepository repo;
  repo.AddModel("good", 1, ScaleModel(2));
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1}, {"n"});
  b.AddOutput("y", DataType::kFloat, {-1}, {"n"});
  b.AddNode("Identity", {"x"}, {"y"});
  repo.AddModel("huge_dims", 1, b.Serialize());
  repo.WriteConfig("huge_dims", R"pb(
    max_batch_size: 0
    input [ { name: "x" data_type: TYPE_FP32 dims: [ 100000000000 ] } ]
  )pb");
  repo.AddModel("huge_count", 1, ScaleModel(2));
  repo.WriteConfig("huge_count", R"pb(
    max_batch_size: 4
    model_warmup [ { name: "many" batch_size: 1 count: 2000000000
      inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } } ]
  )pb");
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  auto index = core->RepositoryIndex(false);
  ASSERT_NE(Find(index, "huge_dims"), nullptr);
  EXPECT_EQ(Find(index, "huge_dims")->state, ModelState::kUnavailable);
  EXPECT_NE(Find(index, "huge_dims")->reason.find("warm-up sample of input 'x' has shape 100000000000"),
            std::string::npos)
      << Find(index, "huge_dims")->reason;
  EXPECT_NE(Find(index, "huge_dims")->reason.find("GiB"), std::string::npos) << Find(index, "huge_dims")->reason;
  ASSERT_NE(Find(index, "huge_count"), nullptr);
  EXPECT_EQ(Find(index, "huge_count")->state, ModelState::kUnavailable);
  EXPECT_NE(Find(index, "huge_count")->reason.find("count 2000000000"), std::string::npos)
      << Find(index, "huge_count")->reason;
  EXPECT_EQ(Find(index, "good")->state, ModelState::kReady);
}

// Regression: a Shutdown() racing the first one returned at once, before the
// models were unloaded (the destructor could then free them under the first).
TEST(ServerCoreTest, ASecondShutdownReturnsOnlyOnceTheFirstHasFinished) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  GateClock clock;
  ServerDeps deps;
  deps.clock = &clock;
  auto core = Start(CpuOptions(repo), deps);
  ASSERT_NE(core, nullptr);
  std::atomic<bool> answered{false};
  clock.HoldNextCallOffThread(std::this_thread::get_id());  // the worker, as it starts the run
  core->Infer(Request("m", {Input({1, 2, 3, 4})}), [&](Expected<InferResponse> r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    answered = true;
  });
  clock.gate().WaitEntered();

  std::thread first([&] { core->Shutdown(); });  // drains: waits for the held request
  while (core->IsLive()) std::this_thread::yield();
  auto second = std::async(std::launch::async, [&] {
    core->Shutdown();
    return answered.load();
  });
  // Not a synchronisation: a second Shutdown that does not wait would return
  // within this bound, with the request still held; one that waits cannot.
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  clock.gate().Release();
  first.join();
  EXPECT_TRUE(second.get()) << "the second Shutdown returned before the queued request was answered";
  EXPECT_TRUE(answered);
}

// Regression: LoadModel checked for a shutdown before waiting for the
// control lock, so a load queued behind another ran after Shutdown had
// unloaded everything and left a model loaded in a stopped server.
TEST(ServerCoreTest, ALoadWaitingForTheControlLockIsRefusedOnceShutdownBegan) {
  TempRepository repo;
  repo.AddModel("a", 1, ScaleModel(2));
  repo.AddModel("b", 1, ScaleModel(2));
  Gate loading_a;
  std::atomic<bool> held{false};
  ServerDeps deps;
  deps.session_factory = [&](const std::string& path, const SessionOptions& o) {
    if (o.log_id == "a" && !held.exchange(true)) loading_a.Enter();
    return Session::Load(path, o);
  };
  auto core = Start(CpuOptions(repo, ModelControlMode::kExplicit), deps);
  ASSERT_NE(core, nullptr);
  auto load_a = std::async(std::launch::async, [&] { return core->LoadModel("a"); });
  loading_a.WaitEntered();  // holds the control lock
  auto load_b = std::async(std::launch::async, [&] { return core->LoadModel("b"); });
  // Not a synchronisation: gives load_b the time to queue on the control lock.
  EXPECT_EQ(load_b.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  std::thread shutdown([&] { core->Shutdown(); });
  while (core->IsLive()) std::this_thread::yield();
  loading_a.Release();
  EXPECT_TRUE(load_a.get().ok());  // began before the shutdown
  Status b = load_b.get();
  shutdown.join();
  EXPECT_EQ(b.code(), Code::kUnavailable) << b.ToString();
  EXPECT_EQ(core->FindLoaded("b", "1"), nullptr);
  EXPECT_EQ(core->FindLoaded("a", "1"), nullptr);
  EXPECT_EQ(core->Rescan().code(), Code::kUnavailable);
}

}  // namespace
}  // namespace ortgpu::serve
