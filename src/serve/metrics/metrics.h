// Metrics: the server's Prometheus metrics, with Triton's names and labels so
// existing Triton dashboards work unchanged. The scheduler records each
// request and execution; a GPU poller sets the GPU gauges; MetricsServer
// (metrics_server.h) serves Serialize() on its own port.
//
// Owns a prometheus::Registry. Every method is thread-safe (a short internal
// lock finds the per-model series; counters themselves are atomic).
//
// Series (labels in brackets; durations are cumulative microseconds, as in
// Triton):
//   nv_inference_request_success{model,version}           counter
//   nv_inference_request_failure{model,version,reason}    counter (reason = CodeName)
//   nv_inference_count{model,version}                     counter, inferences (batch elements)
//   nv_inference_exec_count{model,version}                counter, model executions (batches)
//   nv_inference_request_duration_us{model,version}       counter
//   nv_inference_queue_duration_us{model,version}         counter
//   nv_inference_compute_input_duration_us{model,version} counter
//   nv_inference_compute_infer_duration_us{model,version} counter
//   nv_inference_compute_output_duration_us{model,version} counter
//   nv_inference_pending_request_count{model,version}     gauge
//   nv_inference_request_latency_us{model,version}        histogram of request durations
//   nv_inference_queue_latency_us{model,version}          histogram of queue durations
//   nv_gpu_utilization{gpu_uuid}                          gauge, 0.0 .. 1.0
//   nv_gpu_memory_total_bytes{gpu_uuid}                   gauge
//   nv_gpu_memory_used_bytes{gpu_uuid}                    gauge
//   nv_cpu_utilization                                    gauge, 0.0 .. 1.0, the host's every core
//   nv_cpu_memory_total_bytes, nv_cpu_memory_used_bytes   gauges, the host's memory (used: total less available)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "sys/mutex.h"

namespace ortgpu::serve {

// Where one successful request spent its time, in microseconds.
struct InferDurations {
  int64_t request_us = 0;         // received to response ready
  int64_t queue_us = 0;           // waiting in the scheduler queue
  int64_t compute_input_us = 0;   // copying inputs into the session
  int64_t compute_infer_us = 0;   // Session::Run
  int64_t compute_output_us = 0;  // copying outputs out
};

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One request finished successfully; `batch_size` inferences it carried.
  void RecordSuccess(const std::string& model, const std::string& version, int64_t batch_size,
                     const InferDurations& durations);
  // One request failed; `reason` is a short label, normally CodeName(code).
  void RecordFailure(const std::string& model, const std::string& version, std::string_view reason);
  // One model execution (a batch of one or more requests) ran.
  void RecordExecution(const std::string& model, const std::string& version);
  // Requests queued or executing for the model version right now.
  void SetPending(const std::string& model, const std::string& version, int64_t n);
  // GPU gauges. `utilization` in [0, 1].
  void SetGpu(const std::string& uuid, double utilization, int64_t memory_total_bytes, int64_t memory_used_bytes);
  // The host's CPU gauge, `utilization` in [0, 1] over every core.
  void SetHostCpu(double utilization);
  // The host's memory gauges.
  void SetHostMemory(int64_t total_bytes, int64_t used_bytes);

  // The Prometheus text exposition format, version 0.0.4.
  std::string Serialize() const;

  // For callers that add their own series.
  prometheus::Registry& registry() { return *registry_; }

  // Content-Type of Serialize()'s output.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  struct ModelSeries {
    prometheus::Counter* success;
    prometheus::Counter* count;
    prometheus::Counter* exec_count;
    prometheus::Counter* request_us;
    prometheus::Counter* queue_us;
    prometheus::Counter* input_us;
    prometheus::Counter* infer_us;
    prometheus::Counter* output_us;
    prometheus::Gauge* pending;
    prometheus::Histogram* request_latency;
    prometheus::Histogram* queue_latency;
  };
  ModelSeries& Series(const std::string& model, const std::string& version) REQUIRES(mu_);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& success_;
  prometheus::Family<prometheus::Counter>& failure_;
  prometheus::Family<prometheus::Counter>& count_;
  prometheus::Family<prometheus::Counter>& exec_count_;
  prometheus::Family<prometheus::Counter>& request_us_;
  prometheus::Family<prometheus::Counter>& queue_us_;
  prometheus::Family<prometheus::Counter>& input_us_;
  prometheus::Family<prometheus::Counter>& infer_us_;
  prometheus::Family<prometheus::Counter>& output_us_;
  prometheus::Family<prometheus::Gauge>& pending_;
  prometheus::Family<prometheus::Histogram>& request_latency_;
  prometheus::Family<prometheus::Histogram>& queue_latency_;
  prometheus::Family<prometheus::Gauge>& gpu_util_;
  prometheus::Family<prometheus::Gauge>& gpu_total_;
  prometheus::Family<prometheus::Gauge>& gpu_used_;
  prometheus::Family<prometheus::Gauge>& cpu_util_;
  prometheus::Family<prometheus::Gauge>& cpu_total_;
  prometheus::Family<prometheus::Gauge>& cpu_used_;

  Mutex mu_;
  std::map<std::pair<std::string, std::string>, ModelSeries> series_ GUARDED_BY(mu_);
};

}  // namespace ortgpu::serve
