#include "serve/metrics/metrics.h"

#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/http/test_http_client.h"
#include "serve/metrics/metrics_server.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, SeriesCarryTritonNamesAndLabels) {
  Metrics m;
  InferDurations d;
  d.request_us = 1500;
  d.queue_us = 200;
  d.compute_infer_us = 1000;
  m.RecordSuccess("resnet", "1", 4, d);
  m.RecordSuccess("resnet", "1", 4, d);
  m.RecordExecution("resnet", "1");
  m.RecordFailure("resnet", "1", "invalid_argument");
  m.SetPending("resnet", "1", 3);
  m.SetGpu("GPU-abc", 0.5, 1000, 250);
  std::string text = m.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_success{model="resnet",version="1"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_count{model="resnet",version="1"} 8)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_exec_count{model="resnet",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_duration_us{model="resnet",version="1"} 3000)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_queue_duration_us{model="resnet",version="1"} 400)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_compute_infer_duration_us{model="resnet",version="1"} 2000)"));
  EXPECT_THAT(text, HasSubstr("nv_inference_compute_input_duration_us{"));
  EXPECT_THAT(text, HasSubstr("nv_inference_compute_output_duration_us{"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_pending_request_count{model="resnet",version="1"} 3)"));
  EXPECT_THAT(text,
              HasSubstr(R"(nv_inference_request_failure{model="resnet",reason="invalid_argument",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_latency_us_bucket{model="resnet",version="1",le="2500"} 2)"));
  EXPECT_THAT(text, HasSubstr("nv_inference_queue_latency_us_count{"));
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_utilization{gpu_uuid="GPU-abc"} 0.5)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_memory_total_bytes{gpu_uuid="GPU-abc"} 1000)"));
  EXPECT_THAT(text, HasSubstr(R"(nv_gpu_memory_used_bytes{gpu_uuid="GPU-abc"} 250)"));
}

TEST(MetricsTest, ConcurrentRecordingCountsEveryRequest) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m] {
      for (int i = 0; i < 1000; ++i) m.RecordSuccess("a", "1", 1, {});
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_THAT(m.Serialize(), HasSubstr(R"(nv_inference_request_success{model="a",version="1"} 4000)"));
}

TEST(MetricsServerTest, ScrapeServesTheTextFormat) {
  Metrics m;
  m.RecordSuccess("echo", "1", 1, {});
  m.RecordFailure("echo", "1", "unavailable");
  MetricsServerOptions o;
  o.port = 0;
  auto server = MetricsServer::Start(m, o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  testing::TestHttpClient c((*server)->port());
  auto r = c.Get("/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_THAT(r.header("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  for (const char* name : {"nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
                           "nv_inference_exec_count", "nv_inference_request_duration_us",
                           "nv_inference_queue_duration_us", "nv_inference_pending_request_count",
                           "nv_inference_request_latency_us"}) {
    EXPECT_THAT(r.body, HasSubstr(name));
  }
  testing::TestHttpClient c2((*server)->port());
  EXPECT_EQ(c2.Get("/other").status, 404u);
  (*server)->Stop();
}

}  // namespace
}  // namespace ortgpu::serve
