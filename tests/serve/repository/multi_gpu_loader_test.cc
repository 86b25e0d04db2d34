// Several GPUs in one host (issue 30), on a CPU-only machine: "GPU"
// instances run CPU sessions, the visible GPUs are a list of UUIDs, and a
// FakeDeviceMemory records which thread made which GPU current.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fakes/fake_clock.h"
#include "fakes/fake_device_memory.h"
#include "serve/core/test_repository.h"
#include "serve/repository/model_loader.h"
#include "serve/server.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::ScaleModel;
using testing::TempRepository;

VisibleGpus Gpus(int n) {
  VisibleGpus g;
  for (int i = 0; i < n; ++i) {
    g.uuids.push_back("GPU-" + std::to_string(i));
    g.names.push_back("NVIDIA H100");
  }
  return g;
}

int DeviceId(const SessionOptions& o) {
  auto it = o.cuda_options.find("device_id");
  return it == o.cuda_options.end() ? -1 : std::stoi(it->second);
}

// A host with `gpus` GPUs: sessions asked for are recorded and made on the
// CPU; `fail` (optional) decides a session's failure from its GPU.
struct FakeHost {
  explicit FakeHost(int gpus) : visible(Gpus(gpus)) { memory->SetVisibleGpus(gpus); }
  VisibleGpus visible;
  std::shared_ptr<ortgpu::testing::FakeDeviceMemory> memory = std::make_shared<ortgpu::testing::FakeDeviceMemory>();
  ortgpu::testing::FakeClock clock;
  std::function<Status(int gpu)> fail;
  std::mutex mu;
  std::vector<int> sessions_on;  // the device_id of every session asked for

  Expected<std::shared_ptr<LoadedModel>> Load(const TempRepository& repo, const std::string& name) {
    auto source = ModelRepository::FromDirectory(repo.root()).ReadModel(name);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    auto parsed = ParseModelConfig(source->config_text, source->config_path);
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    LoaderOptions options;
    options.default_instance_kind = InstanceKind::kGpu;
    options.visible_gpus = visible;
    LoaderDeps deps;
    deps.clock = &clock;
    deps.device_memory = memory;
    deps.session_factory = [this](const std::string& path, const SessionOptions& so) -> Expected<std::unique_ptr<Session>> {
      const int gpu = DeviceId(so);
      {
        std::lock_guard lock(mu);
        sessions_on.push_back(gpu);
      }
      if (fail) ORTGPU_RETURN_IF_ERROR(fail(gpu));
      SessionOptions cpu = so;
      cpu.provider = Provider::kCpu;
      cpu.cuda_options.clear();
      return Session::Load(path, cpu);
    };
    return LoadModelVersion(*source, parsed->config, 1, options, deps);
  }
};

// Runs one request of one row through the model and returns its output.
Expected<InferResponse> Infer(LoadedModel& m, float x) {
  std::promise<Expected<InferResponse>> answered;
  QueuedRequest item;
  Tensor t = Tensor::Zeros("x", DataType::kFloat, {1, 4});
  t.data_as<float>()[0] = x;
  item.request.inputs.push_back(std::move(t));
  item.done = [&answered](Expected<InferResponse> r) { answered.set_value(std::move(r)); };
  Status st = m.batcher->Enqueue(item);
  if (!st.ok()) return st;
  return answered.get_future().get();
}

const char* kTwoPerGpu = R"pb(
  max_batch_size: 0
  instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0, 2 ] } ]
)pb";

TEST(MultiGpuLoaderTest, InstancesAreCountPerListedGpuWithTheirDeviceId) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", kTwoPerGpu);
  FakeHost host(4);
  auto m = host.Load(repo, "m");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(host.sessions_on, (std::vector<int>{0, 0, 2, 2}));
  EXPECT_EQ(InstancesPerGpu((*m)->instances), (std::map<int, int>{{0, 2}, {2, 2}}));
  EXPECT_TRUE((*m)->failed_gpus.empty());
  auto r = Infer(**m, 3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outputs[0].data_as<float>()[0], 6.0f);
}

TEST(MultiGpuLoaderTest, WithoutGpusEveryVisibleGpuGetsCountInstances) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 0
    instance_group [ { count: 1 kind: KIND_GPU } ]
  )pb");
  FakeHost two(2);
  auto m2 = two.Load(repo, "m");
  ASSERT_TRUE(m2.ok()) << m2.status().ToString();
  EXPECT_EQ(two.sessions_on, (std::vector<int>{0, 1}));
  FakeHost four(4);
  auto m4 = four.Load(repo, "m");
  ASSERT_TRUE(m4.ok()) << m4.status().ToString();
  EXPECT_EQ(four.sessions_on, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(InstancesPerGpu((*m4)->instances), (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
}

// Every thread that drives an instance makes its GPU current first: the
// loading thread before each instance's warm-up, each worker before its
// first batch (ORT #3475: worker threads defaulting to GPU 0).
TEST(MultiGpuLoaderTest, EveryThreadThatDrivesAnInstanceMakesItsGpuCurrent) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", kTwoPerGpu);
  FakeHost host(4);
  const auto loader_thread = std::this_thread::get_id();
  auto m = host.Load(repo, "m");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<int> on_loader;
  std::map<std::thread::id, std::set<int>> by_worker;
  for (const auto& [thread, gpu] : host.memory->bindings()) {
    if (thread == loader_thread) {
      on_loader.push_back(gpu);
    } else {
      by_worker[thread].insert(gpu);
    }
  }
  EXPECT_EQ(on_loader, (std::vector<int>{0, 0, 2, 2})) << "before each instance's warm-up";
  ASSERT_EQ(by_worker.size(), 4u) << "one worker per instance";
  std::map<int, int> workers_per_gpu;
  for (const auto& [thread, gpus] : by_worker) {
    ASSERT_EQ(gpus.size(), 1u) << "a worker stays on one GPU";
    ++workers_per_gpu[*gpus.begin()];
  }
  EXPECT_EQ(workers_per_gpu, (std::map<int, int>{{0, 2}, {2, 2}}));
}

TEST(MultiGpuLoaderTest, AListedGpuThatIsNotVisibleMakesTheModelUnavailableWithTheReason) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0, 1 ] } ])pb");
  FakeHost host(1);
  host.visible.cuda_visible_devices = "0";
  auto m = host.Load(repo, "m");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(m.status().message(),
              HasSubstr("config of model 'm': instance_group 0 names GPU 1 but 1 GPU is visible "
                        "(CUDA_VISIBLE_DEVICES=0)"));
  EXPECT_TRUE(host.sessions_on.empty()) << "refused before any session";
}

// Failure isolation: a GPU whose instances cannot load takes only its own
// instances out; the version is READY on the others and says why.
TEST(MultiGpuLoaderTest, AGpuThatFailsToLoadLeavesTheModelReadyOnTheOthers) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 0
    instance_group [ { count: 2 kind: KIND_GPU } ]
  )pb");
  FakeHost host(4);
  host.fail = [](int gpu) {
    return gpu == 1 ? Unavailable("CUDA failure 999: unknown error ; GPU=1 (the CUDA EP could not start)")
                    : Status::Ok();
  };
  auto m = host.Load(repo, "m");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(InstancesPerGpu((*m)->instances), (std::map<int, int>{{0, 2}, {2, 2}, {3, 2}}));
  ASSERT_EQ((*m)->failed_gpus.size(), 1u);
  EXPECT_EQ((*m)->failed_gpus[0].gpu, 1);
  EXPECT_EQ((*m)->failed_gpus[0].instances, 2);
  EXPECT_THAT(DescribeGpuFailures((*m)->failed_gpus),
              HasSubstr("GPU 1 (2 instances) is not used: loading instance 2 (GPU 1) of model 'm' version 1: CUDA "
                        "failure 999"));
  for (int x = 1; x <= 8; ++x) {
    auto r = Infer(**m, static_cast<float>(x));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->outputs[0].data_as<float>()[0], 2.0f * x);
  }
}

TEST(MultiGpuLoaderTest, OutOfMemoryOnOneGpuIsIsolatedButAModelErrorIsNot) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 0
    instance_group [ { count: 1 kind: KIND_GPU } ]
  )pb");
  FakeHost oom(2);
  oom.fail = [](int gpu) { return gpu == 0 ? ResourceExhausted("out of memory on GPU 0") : Status::Ok(); };
  auto m = oom.Load(repo, "m");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(InstancesPerGpu((*m)->instances), (std::map<int, int>{{1, 1}}));

  // A model the runtime refuses fails on every GPU alike: no retry.
  FakeHost broken(2);
  broken.fail = [](int gpu) { return gpu == 1 ? InvalidArgument("bad model") : Status::Ok(); };
  auto b = broken.Load(repo, "m");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(broken.sessions_on, (std::vector<int>{0, 1}));
}

TEST(MultiGpuLoaderTest, WhenEveryGpuFailsTheModelIsUnavailableNamingEach) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 0
    instance_group [ { count: 1 kind: KIND_GPU } ]
  )pb");
  FakeHost host(2);
  host.fail = [](int gpu) { return Unavailable("GPU " + std::to_string(gpu) + " is lost"); };
  auto m = host.Load(repo, "m");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kUnavailable);
  EXPECT_THAT(m.status().message(), HasSubstr("GPU 0 (1 instance) is not used: "));
  EXPECT_THAT(m.status().message(), HasSubstr("GPU 1 is lost"));
}

TEST(MultiGpuLoaderTest, TheStartupSummaryListsInstancesPerGpuAndAFailedGpu) {
  ModelSummary m;
  m.name = "resnet";
  m.version = "1";
  m.state = ModelState::kReady;
  m.on_gpu = true;
  m.gpus = {0, 1};
  m.instances_per_gpu = {2, 2};
  m.instances = 4;
  m.warnings = {"GPU 2 (2 instances) is not used: out of memory"};
  const std::string text = FormatStartupSummary({m}, {"NVIDIA H100", "NVIDIA H100", "NVIDIA H100"}, "127.0.0.1",
                                                8000, std::nullopt);
  EXPECT_THAT(text, HasSubstr("GPU 0 (NVIDIA H100) x2, GPU 1 (NVIDIA H100) x2  4"));
  EXPECT_THAT(text, HasSubstr("    warning: GPU 2 (2 instances) is not used: out of memory\n"));
}

}  // namespace
}  // namespace ortgpu::serve
