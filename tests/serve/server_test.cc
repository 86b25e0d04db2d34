// Tests of serve::Server (the whole server in-process on port 0), the
// SchedulerObserver -> Prometheus adapter, the GPU gauges and the start-up
// summary. Uses the example repository (examples/model_repository) on the CPU
// and FakeNvml for the GPU gauges.
#include "serve/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <future>
#include <thread>

#include "fakes/fake_file_system.h"
#include "fakes/fake_nvml.h"
#include "serve/http/test_http_client.h"
#include "serve/metrics/gpu_metrics.h"
#include "serve/metrics/scheduler_metrics.h"
#include "serve/repository/model_precision.h"
#include "serve/scheduler/dynamic_batcher.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TestHttpClient;

const std::string kExamples = std::string(ORTGPU_SOURCE_DIR) + "/examples/model_repository";

ServeOptions ExampleOptions() {
  ServeOptions o;
  o.core.repository = kExamples;
  o.core.loader.default_instance_kind = InstanceKind::kCpu;
  o.http.port = 0;
  o.metrics_port = 0;
  o.grpc_port = 0;
  o.handle_signals = false;
  o.drain_timeout = std::chrono::milliseconds(5000);
  return o;
}

ServeDeps FakeGpuDeps() {
  ServeDeps d;
  d.nvml_factory = [] {
    auto nvml = std::make_unique<ortgpu::testing::FakeNvml>();
    auto& dev = nvml->AddDevice("NVIDIA H200", "GPU-1234", 9, 0, 150'000'000'000, 2'000'000'000);
    dev.utilization_gpu = 42;
    return std::unique_ptr<gpu::Nvml>(std::move(nvml));
  };
  return d;
}

TEST(ServerTest, ServesTheExampleRepositoryAndExportsMetrics) {
  auto server = Server::Start(ExampleOptions(), FakeGpuDeps());
  ASSERT_TRUE(server.ok()) << server.status().message();
  Server& s = **server;
  ASSERT_NE(s.http_port(), 0);
  ASSERT_TRUE(s.metrics_port().has_value());
  ASSERT_TRUE(s.grpc_port().has_value());
  EXPECT_NE(*s.grpc_port(), 0);
  EXPECT_TRUE(s.gpu_metrics());

  auto models = s.Models();
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "add_sub");
  EXPECT_EQ(models[0].state, ModelState::kReady);
  EXPECT_FALSE(models[0].on_gpu);
  EXPECT_EQ(models[0].instances, 1);
  EXPECT_EQ(models[0].max_batch_size, 8);
  EXPECT_TRUE(models[0].dynamic_batching);
  EXPECT_EQ(models[1].name, "classifier");
  EXPECT_EQ(models[1].max_batch_size, 4);  // completed from the model

  TestHttpClient c(s.http_port());
  auto r = c.Post("/v2/models/add_sub/infer",
                  R"({"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]},)"
                  R"({"name":"INPUT1","datatype":"FP32","shape":[1,4],"data":[1,1,1,1]}]})");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_THAT(r.body, HasSubstr(R"("data":[2,3,4,5])"));
  auto bad = c.Post("/v2/models/add_sub/infer",
                    R"({"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]})");
  EXPECT_EQ(bad.status, 400u);

  TestHttpClient m(*s.metrics_port());
  const std::string text = m.Get("/metrics").body;
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_success{model="add_sub",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_exec_count{model="add_sub",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_failure{model="add_sub",reason="invalid_argument",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_pending_request_count{model="add_sub",version="1"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_utilization{gpu_uuid="GPU-1234"} 0.42)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_memory_used_bytes{gpu_uuid="GPU-1234"} 2000000000)"));

  s.RequestStop();
  EXPECT_EQ(s.WaitForStop(), 0);
  EXPECT_TRUE(s.Shutdown());
  EXPECT_TRUE(s.Shutdown());  // idempotent
}

TEST(ServerTest, MetricsCanBeSwitchedOffAndNvmlMayBeMissing) {
  ServeOptions o = ExampleOptions();
  o.metrics_port = -1;
  auto server = Server::Start(o, FakeGpuDeps());
  ASSERT_TRUE(server.ok());
  EXPECT_FALSE((*server)->metrics_port().has_value());
  EXPECT_FALSE((*server)->gpu_metrics());

  ServeDeps no_nvml;
  no_nvml.nvml_factory = [] {
    auto nvml = std::make_unique<ortgpu::testing::FakeNvml>();
    nvml->load_status = Unavailable("cannot load libnvidia-ml.so.1");
    return std::unique_ptr<gpu::Nvml>(std::move(nvml));
  };
  ortgpu::testing::FakeFileSystem proc;
  proc.AddFile("/proc/stat", "cpu  100 0 100 800 0 0 0 0\n");
  proc.AddFile("/proc/meminfo", "MemTotal: 2048 kB\nMemAvailable: 1024 kB\n");
  no_nvml.host_fs = &proc;
  auto cpu_only = Server::Start(ExampleOptions(), std::move(no_nvml));
  ASSERT_TRUE(cpu_only.ok());
  EXPECT_FALSE((*cpu_only)->gpu_metrics());
  TestHttpClient m(*(*cpu_only)->metrics_port());
  auto r = m.Get("/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_THAT(r.body, Not(HasSubstr("nv_gpu_utilization{")));
  // The host's memory, Triton's names, on a machine without a GPU too.
  EXPECT_THAT(r.body, HasSubstr("nv_cpu_memory_total_bytes 2097152"));
  EXPECT_THAT(r.body, HasSubstr("nv_cpu_memory_used_bytes 1048576"));
}

// nv_cpu_utilization is the busy share between two samples of /proc/stat:
// absent after the first, set from the second on.
TEST(GpuMetricsTest, TheHostCpuGaugeIsTheBusyShareBetweenTwoSamples) {
  ortgpu::testing::FakeFileSystem proc;
  proc.AddFile("/proc/stat", "cpu  100 0 100 800 0 0 0 0\n");
  proc.AddFile("/proc/meminfo", "MemTotal: 2048 kB\nMemAvailable: 1024 kB\n");
  Metrics metrics;
  GpuPollerOptions po;
  po.interval = std::chrono::milliseconds(1);
  po.host = &proc;
  GpuMetricsPoller poller(nullptr, metrics, po);  // no NVML: the host's gauges alone
  EXPECT_FALSE(poller.gpus());
  EXPECT_TRUE(poller.running());
  EXPECT_THAT(metrics.Serialize(), Not(HasSubstr("nv_cpu_utilization ")));
  // The same counters again: no time passed between them, so 0 busy.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (metrics.Serialize().find("nv_cpu_utilization ") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  poller.Stop();
  EXPECT_THAT(metrics.Serialize(), HasSubstr("nv_cpu_utilization 0"));
  EXPECT_THAT(metrics.Serialize(), Not(HasSubstr("nv_gpu_utilization{")));
}

TEST(ServerTest, MissingRepositoryFailsToStart) {
  ServeOptions o = ExampleOptions();
  o.core.repository = "/nonexistent/ortgpu-repo";
  auto server = Server::Start(o, FakeGpuDeps());
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("/nonexistent/ortgpu-repo"));
}

TEST(ServerTest, PortInUseFailsNamingTheFlag) {
  auto first = Server::Start(ExampleOptions(), FakeGpuDeps());
  ASSERT_TRUE(first.ok());
  ServeOptions o = ExampleOptions();
  o.http.port = (*first)->http_port();
  auto second = Server::Start(o, FakeGpuDeps());
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr("--http-port"));
}

TEST(ServerTest, RequestStopFromAnotherThreadEndsWaitForStop) {
  auto server = Server::Start(ExampleOptions(), FakeGpuDeps());
  ASSERT_TRUE(server.ok());
  std::thread stopper([&] { (*server)->RequestStop(); });
  EXPECT_EQ((*server)->WaitForStop(), 0);
  stopper.join();
}

// `ortgpu serve` waits a second time, for a second signal during the drain:
// the second wait must see that signal, not return at once (issue 11).
TEST(ServerTest, WaitForStopSeesASecondSignal) {
  ServeOptions o = ExampleOptions();
  o.handle_signals = true;
  auto server = Server::Start(o, FakeGpuDeps());
  ASSERT_TRUE(server.ok());
  std::raise(SIGTERM);  // queued by the signal set until a wait takes it
  EXPECT_EQ((*server)->WaitForStop(), SIGTERM);
  std::raise(SIGTERM);
  EXPECT_EQ((*server)->WaitForStop(), SIGTERM);
}

TEST(SchedulerMetricsTest, CountsRequestsBatchesAndPending) {
  Metrics metrics;
  SchedulerMetrics observer(metrics);
  observer.OnQueued("m", "1", 1);
  observer.OnQueued("m", "1", 2);
  EXPECT_EQ(observer.pending("m", "1"), 2);
  ExecutionTimes t{1000, 5000, 2000};
  observer.OnBatch("m", "1", 3, t, -1);
  observer.OnSuccess("m", "1", 2, 9000, 1000, t);
  observer.OnFailure("m", "1", Code::kResourceExhausted);
  EXPECT_EQ(observer.pending("m", "1"), 0);
  observer.OnRejected("m", "1", Code::kInvalidArgument);
  observer.OnRejected("m", "1", Code::kUnavailable);  // retried on the successor: not a failure

  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_success{model="m",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_count{model="m",version="1"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_exec_count{model="m",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_duration_us{model="m",version="1"} 9)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_queue_duration_us{model="m",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_compute_input_duration_us{model="m",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_compute_infer_duration_us{model="m",version="1"} 5)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_compute_output_duration_us{model="m",version="1"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_failure{model="m",reason="resource_exhausted",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_failure{model="m",reason="invalid_argument",version="1"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(reason="unavailable")")));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_pending_request_count{model="m",version="1"} 0)"));
}

TEST(GpuMetricsTest, SamplesEveryDeviceAndToleratesMissingUtilisation) {
  ortgpu::testing::FakeNvml nvml;
  nvml.AddDevice("NVIDIA H200", "GPU-a", 9, 0, 100, 40).utilization_gpu = 100;
  nvml.AddDevice("NVIDIA H200", "GPU-b", 9, 0, 200, 10).utilization_gpu = std::nullopt;
  ASSERT_TRUE(nvml.Load().ok());
  Metrics metrics;
  EXPECT_TRUE(SampleGpuMetrics(nvml, metrics).ok());
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_utilization{gpu_uuid="GPU-a"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_utilization{gpu_uuid="GPU-b"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_memory_total_bytes{gpu_uuid="GPU-b"} 200)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_memory_used_bytes{gpu_uuid="GPU-a"} 40)"));
}

// Echoes its inputs back at once: the fastest worker there can be.
class EchoRunner : public InstanceRunner {
 public:
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override { return inputs; }
};

// SchedulerMetrics that counts the successes reported before their request
// was counted in (pending already 0).
class OrderCheckingMetrics : public SchedulerMetrics {
 public:
  using SchedulerMetrics::SchedulerMetrics;
  void OnSuccess(const std::string& model, const std::string& version, int64_t rows, int64_t request_ns,
                 int64_t queue_ns, const ExecutionTimes& compute) override {
    if (pending(model, version) <= 0) ++early_successes;
    SchedulerMetrics::OnSuccess(model, version, rows, request_ns, queue_ns, compute);
  }
  std::atomic<int> early_successes{0};
};

// Regression (review item 3): OnQueued ran after the worker was notified, so a
// fast worker's OnSuccess could come first; the clamp at 0 then left the
// pending gauge one too high for good.
TEST(SchedulerMetricsTest, PendingReturnsToZeroWhenAFastBatcherHasAnsweredEverything) {
  Metrics metrics;
  OrderCheckingMetrics observer(metrics);
  ModelStats stats;
  BatcherOptions o;
  o.model_name = "m";
  o.model_version = "1";
  o.max_queue_size = 100'000;
  std::vector<std::unique_ptr<InstanceRunner>> runners;
  runners.push_back(std::make_unique<EchoRunner>());
  runners.push_back(std::make_unique<EchoRunner>());
  DynamicBatcher batcher(o, std::move(runners), RealClock(), stats, &observer);

  constexpr int kThreads = 4, kPerThread = 2000;
  std::atomic<int> answered{0};
  std::promise<void> all_answered;
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        QueuedRequest item;
        item.request.model_name = "m";
        item.request.inputs.push_back(Tensor::Zeros("x", DataType::kFloat, {1}));
        item.done = [&](Expected<InferResponse>) {
          if (++answered == kThreads * kPerThread) all_answered.set_value();
        };
        Status st = batcher.Enqueue(item);
        EXPECT_TRUE(st.ok()) << st.message();
        if (!st.ok()) item.done(st);  // keeps the count whole so the test ends
      }
    });
  }
  for (auto& t : senders) t.join();
  all_answered.get_future().get();
  // OnSuccess runs before each callback, so every request has been counted out.
  EXPECT_EQ(observer.early_successes, 0);
  EXPECT_EQ(observer.pending("m", "1"), 0);
  EXPECT_THAT(metrics.Serialize(), HasSubstr(R"(nv_inference_pending_request_count{model="m",version="1"} 0)"));
}

// Regression (review item 5): two concurrent Stop() calls both joined the
// thread, and running() read it unsynchronised.
TEST(GpuMetricsTest, ConcurrentStopCallsAndRunningReadsAreSafe) {
  auto nvml = std::make_unique<ortgpu::testing::FakeNvml>();
  nvml->AddDevice("NVIDIA H200", "GPU-a", 9, 0, 100, 40);
  Metrics metrics;
  GpuPollerOptions po;
  po.interval = std::chrono::milliseconds(1);
  GpuMetricsPoller poller(std::move(nvml), metrics, po);
  ASSERT_TRUE(poller.running()) << poller.load_status().message();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      (void)poller.running();
      poller.Stop();
      // Every Stop() returns with the thread ended, not only the one that joined.
      EXPECT_FALSE(poller.running());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(poller.running());
  poller.Stop();  // idempotent
}

TEST(StartupSummaryTest, ShowsStateDeviceBatchingReasonAndAddresses) {
  ModelSummary gpu_model;
  gpu_model.name = "resnet";
  gpu_model.version = "3";
  gpu_model.state = ModelState::kReady;
  gpu_model.on_gpu = true;
  gpu_model.gpus = {0};
  gpu_model.instances = 2;
  gpu_model.max_batch_size = 16;
  gpu_model.dynamic_batching = true;
  gpu_model.padded = true;
  gpu_model.warmup = "4.2 s, 3 sizes";
  gpu_model.warnings = {"CUDA graphs are not yet honoured by `ortgpu serve`"};
  ModelSummary broken;
  broken.name = "broken";
  broken.version = "1";
  broken.state = ModelState::kUnavailable;
  broken.reason = "config.pbtxt:3:1: syntax error";
  const std::string text =
      FormatStartupSummary({gpu_model, broken}, {"NVIDIA H200"}, "127.0.0.1", 8000, 8002, 8001);
  EXPECT_THAT(text, HasSubstr("resnet  3        READY        GPU 0 (NVIDIA H200)  2          16              on, padded  "
                              "      4.2 s, 3 sizes\n"
                              "    warning: CUDA graphs are not yet honoured by `ortgpu serve`\n"));
  EXPECT_THAT(text, HasSubstr("broken  1        UNAVAILABLE"));
  EXPECT_THAT(text, HasSubstr("    reason: config.pbtxt:3:1: syntax error\n"));
  EXPECT_THAT(text, HasSubstr("HTTP: http://127.0.0.1:8000\n"));
  EXPECT_THAT(text, HasSubstr("metrics: http://127.0.0.1:8002/metrics\ngRPC: 127.0.0.1:8001\n"));
  EXPECT_THAT(FormatStartupSummary({}, {}, "::1", 1, std::nullopt),
              HasSubstr("HTTP: http://[::1]:1\nmetrics: off\ngRPC: off\n"));
}

TEST(StartupSummaryTest, Issue25SaysWhichBatchSizesRunUnpaddedWithTheirCosts) {
  ModelSummary m;
  m.name = "resnet";
  m.version = "1";
  m.state = ModelState::kReady;
  m.instances = 1;
  m.max_batch_size = 32;
  m.dynamic_batching = true;
  m.padded = true;
  m.padding = "batches run unpadded at 1 (1.20 ms); preferred: 32 (4.10 ms)";
  EXPECT_THAT(FormatStartupSummary({m}, {}, "127.0.0.1", 8000, std::nullopt),
              HasSubstr("\n    padding: batches run unpadded at 1 (1.20 ms); preferred: 32 (4.10 ms)\n"));
}

TEST(StartupSummaryTest, Issue26ShowsThePrecisionAndAWarningOutsideTheBudget) {
  PrecisionOutcome outcome;
  outcome.precision = "fp16";
  outcome.converted = true;
  outcome.from_cache = true;
  outcome.checked = true;
  outcome.min_cosine = 0.99998;
  outcome.max_rel_error = 0.0012;
  outcome.violations = {"max_rel_error 0.0012 > 0.001"};
  ModelSummary m;
  m.name = "m16";
  m.version = "1";
  m.state = ModelState::kReady;
  m.instances = 1;
  m.precision = outcome.Describe();
  const std::string text = FormatStartupSummary({m}, {}, "127.0.0.1", 8000, std::nullopt);
  EXPECT_THAT(text, HasSubstr("\n    precision: fp16 (converted, from the model cache): min cosine 0.99998, max rel err "
                              "0.12%, OUTSIDE the budget (max_rel_error 0.0012 > 0.001)\n"));
  EXPECT_EQ(outcome.AccuracyText(), "min_cosine=0.99998,max_rel_error=0.0012,within_budget=false");
}

}  // namespace
}  // namespace ortgpu::serve
