// Issue 27 through the server core: a GPU load the plan refuses leaves its
// version UNAVAILABLE with the numbers while the other models are READY and
// serve; what a READY version holds is in its statistics' memory_usage and
// in the gauge, and an unload records what it gave back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <mutex>

#include "fakes/fake_nvml.h"
#include "serve/core/test_repository.h"
#include "serve/metrics/scheduler_metrics.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::Find;
using testing::Input;
using testing::InferSync;
using testing::Request;
using testing::GatherModel;
using testing::ScaleModel;
using testing::TempRepository;

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(MemoryPlanCoreTest, ALoadThatWouldNotFitIsUnavailableAndTheOthersServe) {
  TempRepository repo;
  repo.AddModel("big", 1, GatherModel(5000));  // 160,000 bytes of weights an instance
  repo.WriteConfig("big", R"pb(
    max_batch_size: 0
    instance_group [ { count: 2 kind: KIND_GPU } ]
    parameters { key: "share_weights" value { string_value: "off" } }
  )pb");
  repo.AddModel("small", 1, ScaleModel(2));
  repo.WriteConfig("small", R"pb(
    max_batch_size: 0
    instance_group [ { count: 1 kind: KIND_GPU } ]
  )pb");
  std::mutex mu;
  std::vector<std::string> sessions_of;
  ServerDeps deps;
  deps.session_factory = [&](const std::string& path, const SessionOptions& so) {
    {
      std::lock_guard lock(mu);
      sessions_of.push_back(so.log_id);
    }
    SessionOptions cpu;  // "GPU" sessions on the CPU
    return Session::Load(path, cpu);
  };
  deps.nvml_factory = [] {
    auto nvml = std::make_unique<ortgpu::testing::FakeNvml>();
    // 200,000 bytes above the 10% margin: one instance of big fits, two do not.
    nvml->AddDevice("NVIDIA H200", "GPU-0", 9, 0, 80 * kGiB, 72 * kGiB - 200000);
    nvml->process_memory[{0, static_cast<uint32_t>(getpid())}] = 600 << 20;
    return nvml;
  };
  Metrics metrics;
  SchedulerMetrics observer(metrics);
  deps.observer = &observer;
  ServerOptions o = testing::CpuOptions(repo, ModelControlMode::kExplicit);
  o.startup_models = {"*"};
  auto core = testing::Start(o, deps);
  ASSERT_NE(core, nullptr);
  auto index = core->RepositoryIndex(false);
  ASSERT_NE(Find(index, "big"), nullptr);
  EXPECT_EQ(Find(index, "big")->state, ModelState::kUnavailable);
  EXPECT_THAT(Find(index, "big")->reason, HasSubstr("does not fit in GPU 0's memory: it needs 0.3 MiB"));
  EXPECT_THAT(Find(index, "big")->reason, HasSubstr("What would fit: instance_group count 1"));
  EXPECT_EQ(std::count(sessions_of.begin(), sessions_of.end(), "big"), 0) << "refused before any session";
  EXPECT_EQ(Find(index, "small")->state, ModelState::kReady);
  auto r = InferSync(*core, Request("small", {Input({1, 2, 3, 4})}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outputs[0].data_as<float>()[3], 8.0f);

  // What small holds: its statistics' memory_usage and the gauge.
  auto stats = core->Statistics("small", "");
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 1u);
  const auto& usage = (*stats)[0].memory_usage;
  ASSERT_FALSE(usage.empty());
  EXPECT_EQ(usage[0].type, "GPU");
  EXPECT_EQ(usage[0].id, 0);
  EXPECT_THAT(metrics.Serialize(), HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="total",model="small",version="1"})"));

  // Unloading small records what the GPU held after.
  ASSERT_TRUE(core->UnloadModel("small").ok());
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, ::testing::Not(HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="total",model="small")")));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_unload_gpu_memory_bytes{gpu="0",kind="after",model="small",version="1"} 629145600)"));
}

}  // namespace
}  // namespace ortgpu::serve
