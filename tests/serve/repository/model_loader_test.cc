#include "serve/repository/model_loader.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "doctor/placement.h"
#include "fakes/fake_clock.h"
#include "onnx/graph_derivation.h"
#include "serve/core/test_repository.h"
#include "serve/scheduler/batch_costs.h"
#include "support/vit_attention_scale.h"
#include "sys/file_system.h"

namespace ortgpu::serve {
namespace {

using ortgpu::testing::FakeClock;
using testing::ScaleModel;
using testing::TempRepository;

// Every run of every instance, in order: the batch size it ran and the
// first input's first value. Shared by the instances of one load.
struct RunLog {
  std::mutex mu;
  std::vector<int64_t> batch_sizes;
  std::vector<float> first_values;
};

// Forwards to the real (CPU) runner and records each run in the log; with
// `ns_per_row` each run moves the FakeClock by that much per row, as a
// model whose cost grows with its rows would take.
class RecordingRunner : public InstanceRunner {
 public:
  RecordingRunner(std::unique_ptr<InstanceRunner> inner, RunLog& log, FakeClock& clock, int64_t ns_per_row)
      : inner_(std::move(inner)), log_(log), clock_(clock), ns_per_row_(ns_per_row) {}
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    {
      std::lock_guard<std::mutex> lock(log_.mu);
      log_.batch_sizes.push_back(inputs[0].shape[0]);
      log_.first_values.push_back(inputs[0].element_count() > 0 ? inputs[0].data_as<float>()[0] : 0.0f);
    }
    clock_.Advance(ns_per_row_ * inputs[0].shape[0]);
    return inner_->Run(inputs);
  }
  const BatchCosts* batch_costs() const override { return inner_->batch_costs(); }

 private:
  std::unique_ptr<InstanceRunner> inner_;
  RunLog& log_;
  FakeClock& clock_;
  int64_t ns_per_row_;
};

struct Loaded {
  Expected<std::shared_ptr<LoadedModel>> model;
  std::vector<int64_t> warmed;  // batch sizes run while loading, before the model existed
};

// Loads version 1 of `name` (CPU instances) with every run recorded (each
// taking `ns_per_row` per row on `clock`).
Loaded Load(const TempRepository& repo, const std::string& name, RunLog& log, FakeClock& clock,
            int64_t ns_per_row = 0) {
  auto source = ModelRepository::FromDirectory(repo.root()).ReadModel(name);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  inference::ModelConfig config;
  if (source->has_config) {
    auto parsed = ParseModelConfig(source->config_text, source->config_path);
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    config = parsed->config;
  }
  LoaderOptions options;
  options.default_instance_kind = InstanceKind::kCpu;
  LoaderDeps deps;
  deps.session_factory = RealSessionFactory();
  deps.clock = &clock;
  deps.wrap_runner = [&log, &clock, ns_per_row](std::unique_ptr<InstanceRunner> inner) -> std::unique_ptr<InstanceRunner> {
    return std::make_unique<RecordingRunner>(std::move(inner), log, clock, ns_per_row);
  };
  Loaded out{LoadModelVersion(*source, config, 1, options, deps), {}};
  std::lock_guard<std::mutex> lock(log.mu);
  out.warmed = log.batch_sizes;
  return out;
}

std::vector<int64_t> Range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t b = from; b <= to; ++b) out.push_back(b);
  return out;
}

TEST(ModelLoaderTest, EveryBatchSizeTheBatcherCanFormIsWarmedOnEveryInstanceBeforeTheModelExists) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 6
    dynamic_batching { preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 100 }
    instance_group [ { count: 2 kind: KIND_CPU } ]
  )pb");
  RunLog log;
  FakeClock clock;
  Loaded l = Load(repo, "m", log, clock);
  ASSERT_TRUE(l.model.ok()) << l.model.status().ToString();
  std::vector<int64_t> want = Range(1, 6);
  want.insert(want.end(), want.begin(), want.end());  // instance 0, then instance 1
  EXPECT_EQ(l.warmed, want);
  EXPECT_EQ((*l.model)->warmup.batch_sizes, Range(1, 6));
  EXPECT_TRUE((*l.model)->warmup.every_batch_size);
  EXPECT_EQ((*l.model)->warmup.instances, 2);
  EXPECT_NE((*l.model)->warmup.Describe().find("warmed 6 batch sizes x 2 instances in"), std::string::npos)
      << (*l.model)->warmup.Describe();
}

// With padding the executed sizes are warmed: the preferred sizes,
// max_batch_size and the light sizes an idle instance runs unpadded (issue
// 25), each then timed kBatchCostRuns times for the cost table.
TEST(ModelLoaderTest, WithPaddingThePaddedAndLightSizesAreWarmedThenTimed) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  const std::string config = R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 4, 2 ] }
    parameters { key: "pad_to_preferred_batch_size" value { string_value: "true" } }
  )pb";
  repo.WriteConfig("m", config);
  RunLog log;
  FakeClock clock;
  Loaded l = Load(repo, "m", log, clock);
  ASSERT_TRUE(l.model.ok()) << l.model.status().ToString();
  std::vector<int64_t> want = {1, 2, 4, 8};
  for (int64_t n : {1, 2, 4, 8}) want.insert(want.end(), kBatchCostRuns, n);
  EXPECT_EQ(l.warmed, want);

  // adaptive_padding "false": every batch padded, only the padded sizes warmed, nothing timed.
  repo.WriteConfig("m", config + R"pb(parameters { key: "adaptive_padding" value { string_value: "false" } })pb");
  RunLog plain_log;
  Loaded plain = Load(repo, "m", plain_log, clock);
  ASSERT_TRUE(plain.model.ok()) << plain.model.status().ToString();
  EXPECT_EQ(plain.warmed, (std::vector<int64_t>{2, 4, 8}));
  EXPECT_EQ((*plain.model)->padding, "every batch padded to the preferred sizes (adaptive_padding off)");
}

// Issue 25: the warm-up measures what each size costs (a FakeClock that
// moves 100 us per row during each run), and the batcher then runs a lone
// request on the idle instance as batch 1 instead of padding it to 8.
TEST(ModelLoaderTest, Issue25TheWarmupMeasuresTheCostTableAndALoneRequestRunsUnpadded) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 8 ] }
    instance_group [ { count: 1 kind: KIND_CPU } ]
    parameters { key: "pad_to_preferred_batch_size" value { string_value: "true" } }
  )pb");
  RunLog log;
  FakeClock clock;
  Loaded l = Load(repo, "m", log, clock, /*ns_per_row=*/100'000);
  ASSERT_TRUE(l.model.ok()) << l.model.status().ToString();
  LoadedModel& m = **l.model;
  EXPECT_EQ(m.padding,
            "batches run unpadded at 1 (0.10 ms), 2 (0.20 ms), 4 (0.40 ms); preferred: 8 (0.80 ms)");
  std::promise<Expected<InferResponse>> answered;
  QueuedRequest item;
  item.request.model_name = "m";
  Tensor x = Tensor::Zeros("x", DataType::kFloat, {1, 4});
  x.data_as<float>()[0] = 3;
  item.request.inputs.push_back(std::move(x));
  item.done = [&answered](Expected<InferResponse> r) { answered.set_value(std::move(r)); };
  ASSERT_TRUE(m.batcher->Enqueue(item).ok());
  auto r = answered.get_future().get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outputs[0].data_as<float>()[0], 6.0f);
  EXPECT_EQ(m.stats->BatchSizes(), (std::map<int64_t, uint64_t>{{1, 1}}));
}

// Loads version 1 of `name` with KIND_GPU as the default kind and a factory
// that counts the sessions asked for and makes CPU sessions whatever the
// options say (no GPU here).
Expected<std::shared_ptr<LoadedModel>> LoadAsGpuWith(const TempRepository& repo, const std::string& name,
                                                     SessionFactory factory, FakeClock& clock) {
  auto source = ModelRepository::FromDirectory(repo.root()).ReadModel(name);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  auto parsed = ParseModelConfig(source->config_text, source->config_path);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  LoaderOptions options;
  options.default_instance_kind = InstanceKind::kGpu;
  LoaderDeps deps;
  deps.session_factory = std::move(factory);
  deps.clock = &clock;
  return LoadModelVersion(*source, parsed->config, 1, options, deps);
}

Expected<std::shared_ptr<LoadedModel>> LoadAsGpu(const TempRepository& repo, const std::string& name, int& sessions,
                                                 FakeClock& clock) {
  return LoadAsGpuWith(
      repo, name,
      [&sessions](const std::string& path, const SessionOptions& so) {
        ++sessions;
        EXPECT_EQ(so.provider, Provider::kCuda);
        SessionOptions cpu;
        return Session::Load(path, cpu);
      },
      clock);
}

// Issue 25: --require-gpu refused vit_b_16 for the float scalars of its
// attention scale that ORT keeps on the CPU (computed from a Shape).
TEST(ModelLoaderTest, Issue25RequireGpuAcceptsShapeScalarsAndNamesWhatAFallbackReads) {
  auto graph = onnx::DeriveGraph(ortgpu::testing::VitAttentionScaleModel());
  ASSERT_TRUE(graph.ok());
  const std::string cuda = "CUDAExecutionProvider";
  EXPECT_TRUE(RequireGpuVerdict(
                  doctor::SummarizePlacement(ortgpu::testing::VitAttentionScaleEvents(cuda), cuda, {}, &*graph), "vit")
                  .ok());
  const Status fallback = RequireGpuVerdict(
      doctor::SummarizePlacement(ortgpu::testing::VitAttentionScaleEvents("CPUExecutionProvider"), cuda, {}, &*graph),
      "vit");
  EXPECT_EQ(fallback.code(), Code::kFailedPrecondition);
  EXPECT_NE(fallback.message().find(
                "1 compute node(s) fell back to the CPU: Sqrt_7 (Sqrt, reads 'q_scaled', computed from the values of "
                "input 'x')"),
            std::string::npos)
      << fallback.message();
}

// Profiles the session as ProfilePlacementChecker does and remembers how
// the nodes were told apart.
class RecordingPlacement : public PlacementChecker {
 public:
  Status CheckGpuPlacement(const Session& session, const std::vector<Tensor>& inputs) const override {
    saved_graph = session.options().optimized_model_path;
    auto p = doctor::ProfilePlacement(session, inputs, ::testing::TempDir());
    if (!p.ok()) return p.status();
    by_derivation = p->by_derivation;
    return RequireGpuVerdict(*p, session.label());
  }
  mutable std::string saved_graph;
  mutable bool by_derivation = false;
};

TEST(ModelLoaderTest, Issue25RequireGpuJudgesOverTheGraphTheFirstSessionSaved) {
  TempRepository repo;
  repo.AddModel("vit", 1, ortgpu::testing::VitAttentionScaleModel());
  repo.WriteConfig("vit", R"pb(
    max_batch_size: 0
    instance_group [ { count: 2 kind: KIND_GPU } ]
    parameters { key: "require_gpu" value { string_value: "true" } }
  )pb");
  auto source = ModelRepository::FromDirectory(repo.root()).ReadModel("vit");
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto parsed = ParseModelConfig(source->config_text, source->config_path);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  FakeClock clock;
  std::vector<std::string> asked_to_save;
  RecordingPlacement placement;
  LoaderDeps deps;
  deps.session_factory = [&](const std::string& path, const SessionOptions& so) {
    asked_to_save.push_back(so.optimized_model_path);
    SessionOptions cpu = so;  // "GPU" sessions on the CPU, saving what they were asked to
    cpu.provider = Provider::kCpu;
    cpu.cuda_options.clear();
    return Session::Load(path, cpu);
  };
  deps.placement = &placement;
  deps.clock = &clock;
  LoaderOptions options;
  options.default_instance_kind = InstanceKind::kGpu;
  options.warmup_shapes = ShapeFlags{{"batch", {2}}};
  auto m = LoadModelVersion(*source, parsed->config, 1, options, deps);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(placement.by_derivation) << "the check read the graph the session saved";
  ASSERT_FALSE(asked_to_save.empty());
  EXPECT_EQ(asked_to_save[0], placement.saved_graph);
  EXPECT_NE(asked_to_save[0], "");
  for (size_t i = 1; i < asked_to_save.size(); ++i) EXPECT_EQ(asked_to_save[i], "") << "only the first session saves";
  EXPECT_FALSE(RealFileSystem().Exists(asked_to_save[0])) << "removed once the load is done";
}

// Issue 8: on a GPU every new batch shape costs a cuDNN set-up on each run,
// so GPU instances pad by default and give each padded batch size a session
// of its own; the config can turn either off.
TEST(ModelLoaderTest, GpuInstancesPadAndGetOneSessionPerBatchSize) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 2, 4 ] }
    instance_group [ { count: 2 kind: KIND_GPU } ]
  )pb");
  FakeClock clock;
  int sessions = 0;
  auto m = LoadAsGpu(repo, "m", sessions, clock);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->batching.pad_to_preferred_batch_size);
  EXPECT_EQ((*m)->session_per_batch_size, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(sessions, 8);  // per instance: the main one (batch 8) and one each for 1 (light), 2 and 4
  EXPECT_EQ((*m)->workers_per_instance, 2);  // sharing them, so joining overlaps running
  EXPECT_FALSE((*m)->own_worker_sessions);

  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 2, 4 ] }
    instance_group [ { count: 2 kind: KIND_GPU } ]
    parameters { key: "worker_sessions" value { string_value: "own" } }
  )pb");
  sessions = 0;
  m = LoadAsGpu(repo, "m", sessions, clock);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(sessions, 16);  // each worker its own four, every one warmed
  EXPECT_TRUE((*m)->own_worker_sessions);

  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 2, 4 ] }
    instance_group [ { count: 2 kind: KIND_GPU } ]
    parameters { key: "session_per_batch_size" value { string_value: "false" } }
    parameters { key: "workers_per_instance" value { string_value: "1" } }
  )pb");
  sessions = 0;
  m = LoadAsGpu(repo, "m", sessions, clock);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->batching.pad_to_preferred_batch_size);
  EXPECT_TRUE((*m)->session_per_batch_size.empty());
  EXPECT_EQ((*m)->workers_per_instance, 1);
  EXPECT_EQ(sessions, 2);

  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 2, 4 ] }
    instance_group [ { count: 1 kind: KIND_GPU } ]
    parameters { key: "pad_to_preferred_batch_size" value { string_value: "false" } }
  )pb");
  sessions = 0;
  m = LoadAsGpu(repo, "m", sessions, clock);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE((*m)->batching.pad_to_preferred_batch_size);
  EXPECT_EQ(sessions, 1);
}

// Issue 25: the loader served a model without CUDA graphs when a session's
// failure had the words "graph capture" in it, whatever had failed. ORT's
// refusal is recognised once (ort/ort_status.cc, Reason::kCudaGraphRefused);
// the loader follows the reason alone.
TEST(ModelLoaderTest, Issue25OnlyOrtsRefusalToCaptureMakesTheModelRunWithoutGraphs) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 2, 4 ] }
    instance_group [ { count: 1 kind: KIND_GPU } ]
    parameters { key: "workers_per_instance" value { string_value: "1" } }
    optimization { cuda { graphs: true } }
  )pb");
  FakeClock clock;
  // Sessions asked to capture graphs fail with `refusal`; the others load on the CPU.
  auto refusing = [](Status refusal) {
    return [refusal](const std::string& path, const SessionOptions& so) -> Expected<std::unique_ptr<Session>> {
      const auto graph = so.cuda_options.find("enable_cuda_graph");
      if (graph != so.cuda_options.end() && graph->second == "1") return refusal;
      return Session::Load(path, SessionOptions{});
    };
  };
  // ORT's refusal, in words that do not say "graph capture": served without graphs, and the warning says why.
  auto m = LoadAsGpuWith(
      repo, "m",
      refusing(Status(Code::kInternal, "loading model m: all compute nodes are not on the CUDA EP",
                      Reason::kCudaGraphRefused)),
      clock);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE((*m)->cuda_graphs);
  EXPECT_NE((*m)->cuda_graph_warning.find("ONNX Runtime cannot capture this model"), std::string::npos)
      << (*m)->cuda_graph_warning;
  EXPECT_NE((*m)->cuda_graph_warning.find("all compute nodes are not on the CUDA EP"), std::string::npos)
      << (*m)->cuda_graph_warning;
  // 1: the light size adaptive padding runs a lone request at (SERVING.md).
  EXPECT_EQ((*m)->session_per_batch_size, (std::vector<int64_t>{1, 2, 4, 8}));

  // Another failure that happens to say "graph capture": the load fails with it, as any failure does.
  m = LoadAsGpuWith(repo, "m", refusing(Internal("loading model m: graph capture stream: CUDA failure 700")), clock);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kInternal);
  EXPECT_NE(m.status().message().find("CUDA failure 700"), std::string::npos) << m.status().ToString();
}

// GPU instances take turns on their GPU with CUDA graphs (gpu_turns auto),
// or always when the config says on; a value it does not know fails the load.
TEST(ModelLoaderTest, GpuTurnsFollowTheConfigParameter) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  FakeClock clock;
  int sessions = 0;
  const std::string base = R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 2, 4 ] }
    instance_group [ { count: 2 kind: KIND_GPU } ]
  )pb";
  repo.WriteConfig("m", base);
  auto m = LoadAsGpu(repo, "m", sessions, clock);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE((*m)->gpu_turns);  // auto, and no CUDA graphs

  repo.WriteConfig("m", base + R"pb(parameters { key: "gpu_turns" value { string_value: "on" } })pb");
  m = LoadAsGpu(repo, "m", sessions, clock);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->gpu_turns);

  repo.WriteConfig("m", base + R"pb(parameters { key: "gpu_turns" value { string_value: "often" } })pb");
  m = LoadAsGpu(repo, "m", sessions, clock);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("gpu_turns is 'often'"), std::string::npos) << m.status().ToString();
}

TEST(ModelLoaderTest, CpuInstancesDoNotPadUnlessAsked) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 2, 4 ] }
    instance_group [ { count: 1 kind: KIND_CPU } ]
  )pb");
  RunLog log;
  FakeClock clock;
  Loaded l = Load(repo, "m", log, clock);
  ASSERT_TRUE(l.model.ok()) << l.model.status().ToString();
  EXPECT_FALSE((*l.model)->batching.pad_to_preferred_batch_size);
  EXPECT_TRUE((*l.model)->session_per_batch_size.empty());
}

TEST(ModelLoaderTest, AConfigModelWarmupStillRunsAndItsFirstRowBuildsTheBatches) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 3
    dynamic_batching {}
    model_warmup [ { name: "ones" batch_size: 2 count: 1
      inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] random_data: true } } } ]
  )pb");
  RunLog log;
  FakeClock clock;
  Loaded l = Load(repo, "m", log, clock);
  ASSERT_TRUE(l.model.ok()) << l.model.status().ToString();
  // The config's sample (batch 2), then every size from its first row.
  EXPECT_EQ(l.warmed, (std::vector<int64_t>{2, 1, 2, 3}));
  std::lock_guard<std::mutex> lock(log.mu);
  ASSERT_EQ(log.first_values.size(), 4u);
  EXPECT_GT(log.first_values[0], 0.0f);  // random_data, not zeros
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(log.first_values[i], log.first_values[0]);
}

TEST(ModelLoaderTest, WithoutABatchDimensionTheDefaultSampleIsTheWarmup) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"pb(
    max_batch_size: 0
    input [ { name: "x" data_type: TYPE_FP32 dims: [ 2, 4 ] } ]
    output [ { name: "y" data_type: TYPE_FP32 dims: [ 2, 4 ] } ]
  )pb");
  RunLog log;
  FakeClock clock;
  Loaded l = Load(repo, "m", log, clock);
  ASSERT_TRUE(l.model.ok()) << l.model.status().ToString();
  EXPECT_EQ(l.warmed, (std::vector<int64_t>{2}));  // dim 0 is a model dim here, not a batch
  EXPECT_TRUE((*l.model)->warmup.batch_sizes.empty());
}

// A runner that fails at one batch size, as a model out of memory at it would.
class FailsAtBatch : public InstanceRunner {
 public:
  explicit FailsAtBatch(int64_t rows) : rows_(rows) {}
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    if (inputs[0].shape[0] == rows_) return ResourceExhausted("CUDA out of memory");
    return inputs;
  }

 private:
  int64_t rows_;
};

TEST(ModelLoaderTest, ABatchSizeThatFailsItsWarmupNamesTheSizeAndWhatToLower) {
  FailsAtBatch runner(3);
  Status st = WarmBatchSizes(runner, {Tensor::Zeros("x", DataType::kFloat, {1, 4})}, {1, 2, 3, 4}, "instance 0 (GPU 0)", RealClock());
  EXPECT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_NE(st.message().find("instance 0 (GPU 0) at batch size 3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("Lower max_batch_size"), std::string::npos) << st.message();
}

TEST(ModelLoaderTest, BatchWarmupStaysWithinTheWarmupMemoryBound) {
  FailsAtBatch runner(-1);
  const int64_t row = int64_t{1} << 22;  // 16 MiB of floats per row
  Status st = WarmBatchSizes(runner, {Tensor::Zeros("x", DataType::kFloat, {1, 1})}, {1}, "instance 0", RealClock());
  ASSERT_TRUE(st.ok()) << st.message();
  // The bound is checked from the shapes before anything is allocated.
  Tensor wide;
  wide.name = "x";
  wide.dtype = DataType::kFloat;
  wide.shape = {1, row};
  wide.data.resize(static_cast<size_t>(row) * 4);
  st = WarmBatchSizes(runner, {wide}, {300}, "instance 0", RealClock());  // 4.7 GiB
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("GiB"), std::string::npos) << st.message();
}

TEST(ModelLoaderTest, EnableCudaGraphIsNotPassedToTheSessionsItWouldBreak) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  // max_batch_size: 0 (else completed to 4 from the model): no padded sizes, so no graph sessions.
  repo.WriteConfig("m", R"pb(
    max_batch_size: 0
    instance_group [ { kind: KIND_GPU } ]
    optimization { execution_accelerators { gpu_execution_accelerator [ { name: "cuda" parameters [
      { key: "enable_cuda_graph" value: "1" }, { key: "cudnn_conv_algo_search" value: "HEURISTIC" } ] } ] } }
  )pb");
  auto source = ModelRepository::FromDirectory(repo.root()).ReadModel("m");
  ASSERT_TRUE(source.ok());
  auto parsed = ParseModelConfig(source->config_text, source->config_path);
  ASSERT_TRUE(parsed.ok());
  std::vector<SessionOptions> asked;
  FakeClock clock;
  LoaderDeps deps;
  deps.clock = &clock;
  deps.session_factory = [&](const std::string& path, const SessionOptions& o) {
    asked.push_back(o);
    SessionOptions cpu = o;
    cpu.provider = Provider::kCpu;
    return Session::Load(path, cpu);
  };
  auto model = LoadModelVersion(*source, parsed->config, 1, LoaderOptions{}, deps);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].cuda_options.count("enable_cuda_graph"), 0u);
  EXPECT_EQ(asked[0].cuda_options.at("cudnn_conv_algo_search"), "HEURISTIC");
}

TEST(ModelLoaderTest, TheWarmupReportSaysHowLongAndHowManySizes) {
  WarmupReport r;
  r.ns = 4'240'000'000;
  r.instances = 2;
  r.batch_sizes = {1, 2, 3};
  EXPECT_EQ(r.Brief(), "4.2 s, 3 sizes");
  EXPECT_EQ(r.Describe(), "warmed 3 batch sizes x 2 instances in 4.2 s");
  r.every_batch_size = false;
  EXPECT_EQ(r.Brief(), "4.2 s, 3 sizes (subset)");
  r.batch_sizes.clear();
  r.ns = 250'000'000;
  EXPECT_EQ(r.Brief(), "250 ms");
  EXPECT_EQ(r.Describe(), "warm-up 250 ms");
}

}  // namespace
}  // namespace ortgpu::serve
