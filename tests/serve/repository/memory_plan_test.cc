#include "serve/repository/memory_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fakes/fake_clock.h"
#include "fakes/fake_environment.h"
#include "fakes/fake_nvml.h"
#include "serve/core/test_repository.h"
#include "serve/repository/model_loader.h"

namespace ortgpu::serve {
namespace {

using ortgpu::testing::FakeClock;
using ortgpu::testing::FakeEnvironment;
using ortgpu::testing::FakeNvml;
using testing::GatherModel;
using testing::ScaleModel;
using testing::TempRepository;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;

PlanRequest Request(int instances, uint64_t fixed, uint64_t per_instance) {
  PlanRequest r;
  r.model = "resnet";
  r.version = 1;
  r.gpu = 0;
  r.instances = instances;
  r.fixed = fixed;
  r.per_instance = per_instance;
  r.basis = "the memory profile";
  return r;
}

TEST(MemoryPlanTest, ALoadFitsWhenItsNeedIsWithinFreeMemoryLessTheMargin) {
  // 100 GiB GPU, 30 GiB free, 10% margin: 20 GiB available.
  const GpuMemoryState gpu{100 * kGiB, 30 * kGiB};
  PlanVerdict v = JudgePlan(Request(2, 1 * kGiB, 9 * kGiB), gpu, 10);
  EXPECT_TRUE(v.fits);
  EXPECT_EQ(v.need, 19 * kGiB);
  EXPECT_EQ(v.available, 20 * kGiB);
  EXPECT_TRUE(v.message.empty());
  EXPECT_FALSE(JudgePlan(Request(2, 1 * kGiB, 9 * kGiB), gpu, 12).fits) << "a larger margin leaves 18 GiB";
}

TEST(MemoryPlanTest, ARefusalNamesTheNumbersAndWhatWouldFit) {
  PlanRequest r = Request(3, 1 * kGiB, 8 * kGiB);
  r.max_batch_size = 32;
  r.per_instance_at = [](int64_t b) { return static_cast<uint64_t>(b) * 256 * kMiB; };  // 8 GiB at 32
  r.ready_models = 5 * kGiB;
  const PlanVerdict v = JudgePlan(r, {100 * kGiB, 30 * kGiB}, 10);
  ASSERT_FALSE(v.fits);
  EXPECT_EQ(v.need, 25 * kGiB);
  const std::string& m = v.message;
  EXPECT_NE(m.find("model 'resnet' version 1 does not fit in GPU 0's memory: it needs 25.00 GiB (1.00 GiB once + 3 x "
                   "8.00 GiB; from the memory profile)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("the GPU has 30.00 GiB free of 100.00 GiB and the plan keeps 10.00 GiB of it free "
                   "(--gpu-memory-margin 10%), leaving 20.00 GiB (the models already READY there hold 5.00 GiB)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("What would fit: instance_group count 2 (17.00 GiB), max_batch_size 16 (13.00 GiB) or parameters "
                   "{ key: \"precision\" value { string_value: \"fp16\" } }"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("refused before it allocated on the GPU; the models already loaded keep serving"), std::string::npos);
}

TEST(MemoryPlanTest, WhenNothingSmallerFitsItSaysToFreeMemory) {
  PlanRequest r = Request(1, 0, 50 * kGiB);
  r.suggest_fp16 = false;
  const PlanVerdict v = JudgePlan(r, {100 * kGiB, 12 * kGiB}, 10);
  ASSERT_FALSE(v.fits);
  EXPECT_EQ(v.available, 2 * kGiB);
  EXPECT_NE(v.message.find("What would fit: nothing smaller of this model; free memory on the GPU (unload a model) or "
                           "lower --gpu-memory-margin"),
            std::string::npos)
      << v.message;
  const PlanVerdict none_free = JudgePlan(r, {100 * kGiB, 1 * kGiB}, 10);
  EXPECT_EQ(none_free.available, 0u) << "free below the margin leaves nothing";
}

TEST(MemoryPlanTest, ParsesTheMarginAndRefusesWhatIsNotAShare) {
  EXPECT_EQ(*ParseMarginPercent("10"), 10);
  EXPECT_EQ(*ParseMarginPercent("12.5%"), 12.5);
  EXPECT_EQ(*ParseMarginPercent("0%"), 0);
  for (const char* bad : {"", "%", "ten", "95", "-1", "10%%"}) {
    auto m = ParseMarginPercent(bad);
    EXPECT_EQ(m.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(m.status().message().find("--gpu-memory-margin"), std::string::npos);
  }
}

TEST(MemoryPlanTest, SessionRowsFollowTheLoadersLayout) {
  EXPECT_EQ(SessionRowsFor({}, true, false, 2, false), (std::vector<int64_t>{1}));
  EXPECT_EQ(SessionRowsFor({1, 2, 4, 8}, false, false, 2, false), (std::vector<int64_t>{8}));
  EXPECT_EQ(SessionRowsFor({1, 2, 4, 8}, true, false, 2, false), (std::vector<int64_t>{8, 1, 2, 4}));
  EXPECT_EQ(SessionRowsFor({2, 4}, true, true, 2, true), (std::vector<int64_t>{1, 2, 4, 1, 2, 4})) << "graphs: per worker";
  EXPECT_EQ(SessionRowsFor({1, 2, 4, 8}, true, false, 2, true), (std::vector<int64_t>{8, 1, 2, 4, 8, 1, 2, 4}))
      << "worker_sessions own: per worker";
  EXPECT_EQ(SessionRowsFor({1, 8}, false, false, 3, true), (std::vector<int64_t>{8, 8, 8}));
}

// Run q2 (docs/MEMORY.md): two workers sharing a session run it at once
// under load, each with its own activations, and the arena keeps both.
TEST(MemoryPlanTest, WorkersThatShareSessionsCountEachSessionsActivationsOncePerWorker) {
  inference::ModelConfig config;
  config.set_max_batch_size(8);
  config.mutable_dynamic_batching()->add_preferred_batch_size(8);
  const LoadLayout shared = LayoutOf(config, true, {{0, 1}}, ShareWeights::kAuto, false, true);
  EXPECT_EQ(shared.workers, 2) << "serve's default on a GPU instance that batches";
  EXPECT_FALSE(shared.own_sessions);
  EXPECT_EQ(shared.RunsPerSession(), 2);
  (*config.mutable_parameters())["worker_sessions"].set_string_value("own");
  const LoadLayout own = LayoutOf(config, true, {{0, 1}}, ShareWeights::kAuto, false, true);
  EXPECT_TRUE(own.own_sessions);
  EXPECT_EQ(own.RunsPerSession(), 1);
  EXPECT_EQ(own.SessionRows().size(), 2 * shared.SessionRows().size()) << "each worker its own sessions";
  const LoadLayout cpu = LayoutOf(config, true, {}, ShareWeights::kAuto, false, true);
  EXPECT_EQ(cpu.RunsPerSession(), 1) << "one worker on the CPU";

  // A session of 100 MiB + 10 MiB per row: at 8 rows 180 MiB, and a second
  // run's 80 MiB of activations on top; the arena bound follows.
  MemoryProfile p;
  p.session.fixed_bytes = 100 * kMiB;
  p.session.per_row_bytes = 10 * kMiB;
  p.session.through = {1, 8};
  EXPECT_EQ(ArenaLimitFor(p, 8, 0), 180 * kMiB);
  EXPECT_EQ(ArenaLimitFor(p, 8, 0, 2), 260 * kMiB);
}

TEST(MemoryPlanTest, AfterInstanceZeroTheOthersCountTheirWorkersActivations) {
  FakeNvml nvml;
  nvml.AddDevice("NVIDIA H100", "GPU-0", 9, 0, 80 * kGiB, 10 * kGiB);  // 70 GiB free, 62 available
  ASSERT_TRUE(nvml.Load().ok());
  FakeEnvironment env;
  MemoryPlanner planner({}, &nvml, {}, env);
  LoadLayout layout;
  layout.gpu_instances = {{0, 3}};
  layout.workers = 2;
  // 20 GiB an instance, 12 of them activations: 32 under load, and two
  // more instances need 64 GiB, 2 more than there is.
  const Status st = PlanRemainingInstances(planner, "resnet", 1, 0, 2, 20 * kGiB, 12 * kGiB, layout);
  ASSERT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_NE(st.message().find("(12.00 GiB of them activations), and its 2 workers share its sessions: 32.00 GiB per "
                              "instance under load"),
            std::string::npos)
      << st.message();
  layout.own_sessions = true;  // each worker's own sessions were measured already
  EXPECT_TRUE(PlanRemainingInstances(planner, "resnet", 1, 0, 2, 20 * kGiB, 12 * kGiB, layout).ok());
}

TEST(MemoryPlanTest, CountsTheInitializerBytesOfAModelFile) {
  TempRepository repo;
  repo.AddModel("g", 1, GatherModel(5000));
  auto bytes = InitializerBytes(repo.root() + "/g/1/model.onnx");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, 5000u * 8 * 4);
  EXPECT_EQ(InitializerBytes(repo.root() + "/none.onnx").status().code(), Code::kNotFound);
}

TEST(MemoryPlanTest, MapsCudaOrdinalsToNvmlIndicesThroughCudaVisibleDevices) {
  FakeEnvironment env;
  EXPECT_EQ(NvmlIndexOf(1, env), 1u);
  env.Set("CUDA_VISIBLE_DEVICES", "2,3");
  EXPECT_EQ(NvmlIndexOf(0, env), 2u);
  EXPECT_EQ(NvmlIndexOf(1, env), 3u);
  env.Set("CUDA_VISIBLE_DEVICES", "GPU-5f1c");
  EXPECT_EQ(NvmlIndexOf(0, env), 0u) << "without NVML a UUID is not mapped (NvmlPlaceOf maps it)";
}

// A host of four H200s; NVML's GPU 2 is in MIG mode with one 1g.18gb
// instance, which CUDA sees as its device 2 (CUDA_VISIBLE_DEVICES unset).
constexpr const char* kMigNvmlUuid = "MIG-0b1c2d3e-0000-1111-2222-333344445555";
constexpr const char* kMigCudaUuid = "GPU-0b1c2d3e-0000-1111-2222-333344445555";
struct MigHost {
  FakeNvml nvml;
  FakeEnvironment env;
  std::vector<std::string> cuda_uuids = {"GPU-00000000-aaaa-bbbb-cccc-000000000000",
                                         "GPU-11111111-aaaa-bbbb-cccc-111111111111", kMigCudaUuid,
                                         "GPU-33333333-aaaa-bbbb-cccc-333333333333"};
  MigHost() {
    for (int i = 0; i < 4; ++i) {
      const std::string uuid = i == 2 ? "GPU-22222222-aaaa-bbbb-cccc-222222222222" : cuda_uuids[i];
      nvml.AddDevice("NVIDIA H200", uuid, 9, 0, 141 * kGiB, 1 * kGiB);
    }
    nvml.AddMigInstance(2, kMigNvmlUuid, 18 * kGiB, 0);
    EXPECT_TRUE(nvml.Load().ok());
  }
};

TEST(MemoryPlanTest, MapsACudaVisibleDevicesListOfUuidsThroughNvml) {
  MigHost host;
  host.env.Set("CUDA_VISIBLE_DEVICES", host.cuda_uuids[3] + "," + host.cuda_uuids[1] + "," + kMigNvmlUuid);
  auto second = NvmlPlaceOf(host.nvml, 1, "", host.env);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->index, 1u) << "CUDA device 1 is the list's second GPU, not NVML's GPU 0";
  EXPECT_EQ(NvmlPlaceOf(host.nvml, 0, "", host.env)->index, 3u);
  auto mig = NvmlPlaceOf(host.nvml, 2, "", host.env);
  ASSERT_TRUE(mig.ok()) << mig.status().message();
  EXPECT_EQ(mig->index, 2u);
  ASSERT_TRUE(mig->mig.has_value()) << "a MIG instance named by its MIG- UUID";
  EXPECT_EQ(ReadGpuUse(&host.nvml, 2, "", host.env).device, 0u) << "the instance's own used memory, not the GPU's";
  host.env.Set("CUDA_VISIBLE_DEVICES", "GPU-deadbeef-0000-0000-0000-000000000000");
  EXPECT_EQ(NvmlPlaceOf(host.nvml, 0, "", host.env).status().code(), Code::kNotFound) << "no GPU is guessed";
  EXPECT_FALSE(ReadGpuUse(&host.nvml, 0, "", host.env).device.has_value());
  // CUDA's UUID of the device comes first.
  EXPECT_EQ(NvmlPlaceOf(host.nvml, 0, host.cuda_uuids[3], host.env)->index, 3u);
}

// Issue 30 item 5: on a MIG instance the plan has the instance's own memory.
TEST(MemoryPlanTest, OnAMigInstanceThePlanHasTheInstancesMemoryNotTheGpus) {
  MigHost host;
  MemoryPlanner planner({}, &host.nvml, host.cuda_uuids, host.env);
  auto state = planner.State(2);
  ASSERT_TRUE(state.ok()) << state.status().message();
  EXPECT_EQ(state->total, 18 * kGiB);
  EXPECT_EQ(state->free, 18 * kGiB);
  EXPECT_TRUE(state->mig);
  EXPECT_EQ(planner.State(3)->total, 141 * kGiB) << "a whole GPU";
  // 18 GiB less the 10% margin leaves 16.2 GiB: 20 GiB is refused, 10 fits.
  PlanRequest big = Request(1, 0, 20 * kGiB);
  big.gpu = 2;
  const PlanVerdict refused = JudgePlan(big, *state, planner.options().margin_percent);
  EXPECT_FALSE(refused.fits);
  EXPECT_NE(refused.message.find("the MIG instance has 18.00 GiB free of 18.00 GiB"), std::string::npos)
      << refused.message;
  EXPECT_EQ(refused.message.find("141"), std::string::npos) << refused.message;
  EXPECT_TRUE(JudgePlan(Request(1, 0, 10 * kGiB), *state, planner.options().margin_percent).fits);
  // Through the planner, as the loader asks after instance 0.
  LoadLayout layout;
  const Status st = PlanRemainingInstances(planner, "resnet", 1, 2, 1, 20 * kGiB, 0, layout);
  EXPECT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_NE(st.message().find("free of 18.00 GiB"), std::string::npos) << st.message();
  EXPECT_TRUE(PlanRemainingInstances(planner, "resnet", 1, 2, 1, 10 * kGiB, 0, layout).ok());
}

TEST(MemoryPlanTest, KeepsProfilesByKeyAndIgnoresADamagedOne) {
  TempRepository dir;
  MemoryPlanOptions o;
  o.profile_dir = dir.root() + "/memory";
  MemoryPlanner planner(o, nullptr);
  EXPECT_FALSE(planner.active()) << "no NVML: no plan";
  EXPECT_FALSE(planner.FindProfile("k").has_value());
  MemoryProfile p;
  p.session = *FitMemory({{1, 10.0 * kMiB}, {8, 80.0 * kMiB}});
  p.other = 5 * kMiB;
  p.measured_shape = {{8, 1}, 2};
  planner.StoreProfile("k", p);
  auto back = planner.FindProfile("k");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(PredictPeak(*back, {{8}, 3}), PredictPeak(p, {{8}, 3}));
  std::ofstream(o.profile_dir + "/k.json") << "{ not json";
  EXPECT_FALSE(planner.FindProfile("k").has_value());
}

// What the loader measures, with "GPU" instances on the CPU: a factory that
// makes CPU sessions and, as a GPU would, grows this process's device memory
// (FakeNvml) by 10 MiB a session.
struct GpuLoad {
  FakeNvml nvml;
  FakeClock clock;
  int sessions = 0;
  std::vector<SessionOptions> asked;

  GpuLoad() {
    nvml.AddDevice("NVIDIA H200", "GPU-0", 9, 0, 80 * kGiB, 10 * kGiB);
    EXPECT_TRUE(nvml.Load().ok());
  }
  Expected<std::shared_ptr<LoadedModel>> Load(const TempRepository& repo, const std::string& name,
                                             const MemoryPlanner* planner) {
    auto source = ModelRepository::FromDirectory(repo.root()).ReadModel(name);
    EXPECT_TRUE(source.ok());
    auto parsed = ParseModelConfig(source->config_text, source->config_path);
    EXPECT_TRUE(parsed.ok());
    LoaderOptions options;
    options.default_instance_kind = InstanceKind::kGpu;
    LoaderDeps deps;
    deps.session_factory = [this](const std::string& path, const SessionOptions& so) {
      ++sessions;
      asked.push_back(so);
      nvml.process_memory[{0, static_cast<uint32_t>(getpid())}] += 10 * kMiB;
      nvml.devices[0].memory.used += 10 * kMiB;
      nvml.devices[0].memory.free -= 10 * kMiB;
      SessionOptions cpu;
      return Session::Load(path, cpu);
    };
    deps.clock = &clock;
    deps.nvml = &nvml;
    deps.planner = planner;
    return LoadModelVersion(*source, parsed->config, 1, options, deps);
  }
  // Loads on a GPU with `room` bytes free above the plan's 10% margin.
  Expected<std::shared_ptr<LoadedModel>> LoadWithRoom(const TempRepository& repo, const std::string& name, uint64_t room) {
    nvml.devices[0].memory = {80 * kGiB, 72 * kGiB - room, 8 * kGiB + room};
    MemoryPlanner planner({}, &nvml);
    return Load(repo, name, &planner);
  }
};

TEST(MemoryPlanTest, TheLoaderMeasuresTheSplitAndTheLineThroughItsSessions) {
  TempRepository repo;
  repo.AddModel("g", 1, GatherModel(5000));
  repo.WriteConfig("g", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 4, 8 ] }
    instance_group [ { count: 2 kind: KIND_GPU } ]
    parameters { key: "share_weights" value { string_value: "off" } }
  )pb");
  GpuLoad load;
  auto m = load.Load(repo, "g", nullptr);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelMemory& memory = (*m)->memory;
  ASSERT_EQ(memory.devices.size(), 1u);
  const MemorySplit& split = memory.devices[0].split;
  EXPECT_TRUE(memory.devices[0].gpu);
  // (The CPU EP may read a table in place rather than copy it into its
  // arena, as the CUDA EP must: weights are what the arenas hold.)
  EXPECT_GT(split.arena_reserved, 0u);
  ASSERT_TRUE(split.other.has_value());
  EXPECT_EQ(split.total(), static_cast<uint64_t>(load.sessions) * 10 * kMiB) << "what NVML saw the load take";
  ASSERT_TRUE(memory.profile.has_value());
  // Per instance: main (8), light 1 and 2, preferred 4: as the plan lays it out.
  LoadLayout layout;
  layout.policy = (*m)->batching;
  layout.per_size_sessions = true;
  EXPECT_EQ(memory.profile->measured_shape.session_rows, layout.SessionRows());
  EXPECT_EQ(memory.profile->measured_shape.instances, 2);
  EXPECT_EQ(memory.profile->session.through, (std::vector<int64_t>{1, 8}));
  EXPECT_TRUE(memory.profile->session.check_batch.has_value());
  EXPECT_NE(memory.Describe().find("GPU 0 "), std::string::npos) << memory.Describe();
  const auto usage = memory.Usage();
  ASSERT_FALSE(usage.empty());
  EXPECT_EQ(usage[0].type, "GPU");
  EXPECT_EQ(usage[0].byte_size, split.total());
}

TEST(MemoryPlanTest, ALoadThatDoesNotFitIsRefusedBeforeAnySession) {
  TempRepository repo;
  repo.AddModel("g", 1, GatherModel(5000));  // 160,000 bytes of weights
  repo.WriteConfig("g", R"pb(
    max_batch_size: 0
    instance_group [ { count: 2 kind: KIND_GPU } ]
    parameters { key: "share_weights" value { string_value: "off" } }
  )pb");
  GpuLoad load;
  auto m = load.LoadWithRoom(repo, "g", 200000);  // one instance's weights fit, two do not
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kResourceExhausted);
  EXPECT_EQ(load.sessions, 0) << "refused before any session was created";
  const std::string& why = m.status().message();
  EXPECT_NE(why.find("it needs 0.3 MiB (2 x 0.2 MiB; from its weights alone"), std::string::npos) << why;
  EXPECT_NE(why.find("What would fit: instance_group count 1 (0.2 MiB)"), std::string::npos) << why;
  EXPECT_EQ(why.find(repo.root()), std::string::npos) << "no server path in the reason";
}

// Issue 30: the plan is judged per GPU; a GPU without room is left out as a
// GPU that fails to load is, and the model is READY on the others.
TEST(MemoryPlanTest, AGpuWithoutRoomIsLeftOutAndTheModelLoadsOnTheOthers) {
  TempRepository repo;
  repo.AddModel("g", 1, GatherModel(5000));  // 160,000 bytes of weights
  repo.WriteConfig("g", R"pb(
    max_batch_size: 0
    instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0, 1 ] } ]
    parameters { key: "share_weights" value { string_value: "off" } }
  )pb");
  FakeNvml nvml;
  nvml.AddDevice("NVIDIA H100", "GPU-0", 9, 0, 80 * kGiB, 10 * kGiB);
  nvml.AddDevice("NVIDIA H100", "GPU-1", 9, 0, 80 * kGiB, 72 * kGiB - 200000);  // room for one instance only
  ASSERT_TRUE(nvml.Load().ok());
  FakeEnvironment env;  // CUDA_VISIBLE_DEVICES unset: CUDA ordinal = NVML index
  MemoryPlanner planner({}, &nvml, {}, env);
  auto source = ModelRepository::FromDirectory(repo.root()).ReadModel("g");
  ASSERT_TRUE(source.ok());
  auto parsed = ParseModelConfig(source->config_text, source->config_path);
  ASSERT_TRUE(parsed.ok());
  LoaderOptions options;
  options.default_instance_kind = InstanceKind::kGpu;
  VisibleGpus visible;
  visible.uuids = {"GPU-0", "GPU-1"};
  visible.names = {"NVIDIA H100", "NVIDIA H100"};
  options.visible_gpus = visible;
  FakeClock clock;
  std::vector<std::string> asked;
  LoaderDeps deps;
  deps.clock = &clock;
  deps.planner = &planner;
  deps.session_factory = [&asked](const std::string& path, const SessionOptions& so) {
    asked.push_back(so.cuda_options.count("device_id") ? so.cuda_options.at("device_id") : "");
    return Session::Load(path, SessionOptions{});
  };
  auto m = LoadModelVersion(*source, parsed->config, 1, options, deps);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(asked, (std::vector<std::string>{"0", "0"})) << "nothing was made on GPU 1";
  ASSERT_EQ((*m)->failed_gpus.size(), 1u);
  EXPECT_EQ((*m)->failed_gpus[0].gpu, 1);
  EXPECT_EQ((*m)->failed_gpus[0].instances, 2);
  EXPECT_NE((*m)->failed_gpus[0].reason.find("What would fit: instance_group count 1"), std::string::npos)
      << (*m)->failed_gpus[0].reason;
}

TEST(MemoryPlanTest, WithoutAProfileTheOtherInstancesWaitForInstanceZerosMeasurement) {
  TempRepository repo;
  repo.AddModel("s", 1, ScaleModel(2));  // no weights: the estimate says nothing
  repo.WriteConfig("s", R"pb(
    max_batch_size: 64
    instance_group [ { count: 3 kind: KIND_GPU } ]
    parameters { key: "session_per_batch_size" value { string_value: "false" } }
  )pb");
  GpuLoad load;
  auto m = load.LoadWithRoom(repo, "s", 4096);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kResourceExhausted);
  EXPECT_EQ(load.sessions, 1) << "instance 0 only";
  EXPECT_NE(m.status().message().find("the other 2 instances need"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("instance 0, loaded and warmed, holds"), std::string::npos);
  EXPECT_NE(m.status().message().find("instance 0 was released"), std::string::npos);
}

TEST(MemoryPlanTest, ASecondLoadIsPlannedFromTheFirstOnesProfileAndCanBoundItsArenas) {
  TempRepository repo;
  repo.AddModel("g", 1, GatherModel(5000));
  const std::string config = R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 8 ] }
    instance_group [ { count: 1 kind: KIND_GPU } ]
    optimization { execution_accelerators { gpu_execution_accelerator [
      { name: "cuda" parameters { key: "gpu_mem_limit" value: "plan" } } ] } }
  )pb";
  repo.WriteConfig("g", config);
  TempRepository cache;
  MemoryPlanOptions o;
  o.profile_dir = cache.root() + "/memory";
  GpuLoad first;
  MemoryPlanner planner(o, &first.nvml);
  auto m = first.Load(repo, "g", &planner);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (const auto& so : first.asked) EXPECT_EQ(so.cuda_options.count("gpu_mem_limit"), 0u) << "no profile yet: no bound";
  ASSERT_EQ(std::distance(std::filesystem::directory_iterator(o.profile_dir), {}), 1) << "the profile was kept";
  // The same model with 4 instances on a GPU with a MiB less than the
  // profile predicts for them: refused from the profile, before any session.
  repo.WriteConfig("g", std::string(config).replace(config.find("count: 1"), 8, "count: 4"));
  ASSERT_TRUE((*m)->memory.profile.has_value());
  const MemoryProfile& profile = *(*m)->memory.profile;
  // (The GPU instance's two workers share its sessions: two runs each.)
  const uint64_t room = PredictPeak(profile, {profile.measured_shape.session_rows, 4, 2}) - kMiB;
  GpuLoad second;
  second.nvml.devices[0].memory = {80 * kGiB, 72 * kGiB - room, 8 * kGiB + room};
  MemoryPlanner planner2(o, &second.nvml);  // with the profile folder
  auto refused = second.Load(repo, "g", &planner2);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(second.sessions, 0);
  EXPECT_NE(refused.status().message().find("from the memory profile measured at an earlier load"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("What would fit: instance_group count 3"), std::string::npos)
      << refused.status().message();
  // One instance again: it fits, and its sessions' arenas are bounded.
  repo.WriteConfig("g", config);
  GpuLoad third;
  MemoryPlanner planner3(o, &third.nvml);
  ASSERT_TRUE(third.Load(repo, "g", &planner3).ok());
  ASSERT_FALSE(third.asked.empty());
  for (const auto& so : third.asked) {
    ASSERT_EQ(so.cuda_options.count("gpu_mem_limit"), 1u);
    EXPECT_GT(std::stoull(so.cuda_options.at("gpu_mem_limit")), 0u);
  }
}

}  // namespace
}  // namespace ortgpu::serve
