// A GPU lost while serving, through the server core (issue 30 item 1): the
// model serves on the GPUs left and stays READY; once every GPU it ran on is
// lost it reads as UNAVAILABLE with the reason (index, readiness, requests),
// the other models keep serving, and a reload brings it back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fakes/fake_device_memory.h"
#include "serve/core/test_repository.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::Find;
using testing::InferSync;
using testing::Input;
using testing::Request;
using testing::ScaleModel;
using testing::TempRepository;

constexpr const char* kIllegalAddress = "CUDA failure 700: an illegal memory access was encountered";

// The GPUs whose runs fail with a sticky CUDA error ("broken" by the test),
// and one whose runs wait until released ("held"), to steer a request to
// the other GPU: with two GPUs idle, which worker takes a request is the
// scheduler's luck (6 in 100 runs once sent 50 in a row to GPU 0).
struct BrokenGpus {
  std::mutex mu;
  std::condition_variable changed;
  std::set<int> gpus;
  std::optional<int> held;  // the GPU whose runs wait
  int waiting = 0;          // runs waiting on it
  bool answered = false;    // the steered request was answered (MarkAnswered)
  bool Has(int gpu) {
    std::unique_lock lock(mu);
    if (gpu == held) {
      ++waiting;
      changed.notify_all();
      changed.wait(lock, [&] { return held != gpu; });
      --waiting;
    }
    return gpus.count(gpu) > 0;
  }
  void Hold(int gpu) {
    std::lock_guard lock(mu);
    held = gpu;
  }
  void Release() {
    std::lock_guard lock(mu);
    held.reset();
    answered = false;
    changed.notify_all();
  }
  void MarkAnswered() {
    std::lock_guard lock(mu);
    answered = true;
    changed.notify_all();
  }
  // Waits until a run waits on the held GPU or the request was answered;
  // true in the first case.
  bool WaitForHeldRunOrAnswer() {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return waiting > 0 || answered; });
    return waiting > 0;
  }
  void Break(int gpu) {
    std::lock_guard lock(mu);
    gpus.insert(gpu);
  }
  void Repair() {
    std::lock_guard lock(mu);
    gpus.clear();
  }
};

// Runs what the inner runner runs, unless its GPU is broken.
class BreakableRunner : public InstanceRunner {
 public:
  BreakableRunner(std::unique_ptr<InstanceRunner> inner, BrokenGpus& broken)
      : inner_(std::move(inner)), broken_(broken) {}
  Status PrepareOnWorker() override { return inner_->PrepareOnWorker(); }
  GpuTurn* gpu_turn() const override { return inner_->gpu_turn(); }
  int device() const override { return inner_->device(); }
  const BatchCosts* batch_costs() const override { return inner_->batch_costs(); }
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    if (broken_.Has(device())) return Internal(kIllegalAddress);
    return inner_->Run(inputs);
  }
  Expected<std::vector<Tensor>> RunBatch(const std::vector<const std::vector<Tensor>*>& requests, int64_t padding_rows,
                                         const Clock& clock, int64_t& inputs_ready_ns,
                                         const std::vector<std::string>& outputs,
                                         const std::vector<const OutputDestinations*>& destinations) override {
    if (broken_.Has(device())) return Internal(kIllegalAddress);
    return inner_->RunBatch(requests, padding_rows, clock, inputs_ready_ns, outputs, destinations);
  }

 private:
  std::unique_ptr<InstanceRunner> inner_;
  BrokenGpus& broken_;
};

struct TwoGpuServer {
  explicit TwoGpuServer(const TempRepository& repo) {
    auto memory = std::make_shared<ortgpu::testing::FakeDeviceMemory>();
    memory->SetVisibleGpus(2);
    ServerDeps deps;
    deps.device_memory = memory;
    deps.session_factory = [](const std::string& path, const SessionOptions& so) {
      SessionOptions cpu = so;  // "GPU" sessions on the CPU
      cpu.provider = Provider::kCpu;
      cpu.cuda_options.clear();
      return Session::Load(path, cpu);
    };
    deps.wrap_runner = [this](std::unique_ptr<InstanceRunner> inner) -> std::unique_ptr<InstanceRunner> {
      return std::make_unique<BreakableRunner>(std::move(inner), broken);
    };
    ServerOptions o = testing::CpuOptions(repo, ModelControlMode::kExplicit);
    o.startup_models = {"*"};
    o.loader.default_instance_kind = InstanceKind::kGpu;
    VisibleGpus visible;
    visible.uuids = {"GPU-0", "GPU-1"};
    visible.names = {"NVIDIA H100", "NVIDIA H100"};
    o.loader.visible_gpus = visible;
    core = testing::Start(o, deps);
  }
  // Two requests while GPU 0's runs wait: the first runs on GPU 1, or waits
  // on GPU 0 and leaves the second only GPU 1. Returns the first failure,
  // or Ok when both succeeded.
  Status SendWithGpu0Held(const std::string& model) {
    broken.Hold(0);
    std::promise<Expected<InferResponse>> first;
    auto first_done = first.get_future();
    core->Infer(Request(model, {Input({1, 2, 3, 4})}), [this, &first](Expected<InferResponse> r) {
      first.set_value(std::move(r));
      broken.MarkAnswered();
    });
    Status second = Status::Ok();
    if (broken.WaitForHeldRunOrAnswer()) {
      auto r = InferSync(*core, Request(model, {Input({1, 2, 3, 4})}));
      if (!r.ok()) second = r.status();
    }
    broken.Release();
    auto r = first_done.get();
    return r.ok() ? second : r.status();
  }
  // Requests until one fails (the broken GPU's batch) or `tries` pass.
  Status SendUntilFailure(const std::string& model, int tries) {
    for (int i = 0; i < tries; ++i) {
      auto r = InferSync(*core, Request(model, {Input({1, 2, 3, 4})}));
      if (!r.ok()) return r.status();
    }
    return Status::Ok();
  }
  BrokenGpus broken;
  std::unique_ptr<ServerCore> core;
};

void WriteModels(TempRepository& repo) {
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 0
    instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0, 1 ] } ]
  )pb");
  repo.AddModel("on_cpu", 1, ScaleModel(3));
  repo.WriteConfig("on_cpu", R"pb(
    max_batch_size: 0
    instance_group [ { count: 1 kind: KIND_CPU } ]
  )pb");
}

TEST(GpuLossCoreTest, OneGpuLostTheModelStaysReadyOnTheOther) {
  TempRepository repo;
  WriteModels(repo);
  TwoGpuServer server(repo);
  ASSERT_NE(server.core, nullptr);
  ASSERT_EQ(Find(server.core->RepositoryIndex(false), "m")->state, ModelState::kReady);

  server.broken.Break(1);
  // The batch that met GPU 1's error fails; the GPU is then out.
  Status failed = server.SendWithGpu0Held("m");
  ASSERT_FALSE(failed.ok()) << "no batch ran on GPU 1";
  EXPECT_THAT(failed.message(), HasSubstr("illegal memory access"));
  for (int i = 0; i < 20; ++i) {
    auto r = InferSync(*server.core, Request("m", {Input({1, 2, 3, 4})}));
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status().ToString();
    EXPECT_EQ(r->outputs[0].data_as<float>()[3], 8.0f);
  }
  const auto* m = Find(server.core->RepositoryIndex(false), "m");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->state, ModelState::kReady);
  EXPECT_TRUE(server.core->IsReady());
  EXPECT_TRUE(*server.core->IsModelReady("m", ""));
}

TEST(GpuLossCoreTest, EveryGpuLostTheModelIsUnavailableWithWhyAndTheOthersServe) {
  TempRepository repo;
  WriteModels(repo);
  TwoGpuServer server(repo);
  ASSERT_NE(server.core, nullptr);
  server.broken.Break(0);
  server.broken.Break(1);
  // Each GPU's first batch fails and takes it out.
  EXPECT_FALSE(server.SendUntilFailure("m", 1).ok());
  EXPECT_FALSE(server.SendUntilFailure("m", 1).ok());

  auto r = InferSync(*server.core, Request("m", {Input({1, 2, 3, 4})}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("has no GPU left to run on"));
  EXPECT_THAT(r.status().message(), HasSubstr("GPU 0: "));
  EXPECT_THAT(r.status().message(), HasSubstr("GPU 1: "));

  const auto* m = Find(server.core->RepositoryIndex(false), "m");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->state, ModelState::kUnavailable);
  EXPECT_THAT(m->reason, HasSubstr("illegal memory access"));
  EXPECT_THAT(m->reason, HasSubstr("reload the model or restart the server"));
  EXPECT_EQ(Find(server.core->RepositoryIndex(true), "m"), nullptr) << "not listed as ready";
  EXPECT_FALSE(*server.core->IsModelReady("m", ""));
  EXPECT_FALSE(*server.core->IsModelReady("m", "1"));
  EXPECT_FALSE(server.core->IsReady()) << "the server cannot serve every model it loaded";

  // The other model serves on.
  auto other = InferSync(*server.core, Request("on_cpu", {Input({1, 2, 3, 4})}));
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(other->outputs[0].data_as<float>()[3], 12.0f);

  // Repaired and reloaded through the load API: READY again.
  server.broken.Repair();
  ASSERT_TRUE(server.core->LoadModel("m").ok());
  EXPECT_EQ(Find(server.core->RepositoryIndex(false), "m")->state, ModelState::kReady);
  EXPECT_TRUE(server.core->IsReady());
  auto again = InferSync(*server.core, Request("m", {Input({1, 2, 3, 4})}));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

}  // namespace
}  // namespace ortgpu::serve
