#include "serve/metrics/metrics.h"

#include <prometheus/text_serializer.h>

namespace ortgpu::serve {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// Microsecond buckets from 100 us to 10 s: GPU inference spans that range.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1e6, 2.5e6, 5e6, 1e7};
  return kBuckets;
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      success_(BuildCounter()
                   .Name("nv_inference_request_success")
                   .Help("Number of successful inference requests, all batch sizes")
                   .Register(*registry_)),
      failure_(BuildCounter()
                   .Name("nv_inference_request_failure")
                   .Help("Number of failed inference requests, all batch sizes")
                   .Register(*registry_)),
      count_(BuildCounter()
                 .Name("nv_inference_count")
                 .Help("Number of inferences performed (a batch of n counts n)")
                 .Register(*registry_)),
      exec_count_(BuildCounter()
                      .Name("nv_inference_exec_count")
                      .Help("Number of model executions performed (a batch counts once)")
                      .Register(*registry_)),
      request_us_(BuildCounter()
                      .Name("nv_inference_request_duration_us")
                      .Help("Cumulative inference request duration in microseconds")
                      .Register(*registry_)),
      queue_us_(BuildCounter()
                    .Name("nv_inference_queue_duration_us")
                    .Help("Cumulative inference queuing duration in microseconds")
                    .Register(*registry_)),
      input_us_(BuildCounter()
                    .Name("nv_inference_compute_input_duration_us")
                    .Help("Cumulative compute input duration in microseconds")
                    .Register(*registry_)),
      infer_us_(BuildCounter()
                    .Name("nv_inference_compute_infer_duration_us")
                    .Help("Cumulative compute inference duration in microseconds")
                    .Register(*registry_)),
      output_us_(BuildCounter()
                     .Name("nv_inference_compute_output_duration_us")
                     .Help("Cumulative compute output duration in microseconds")
                     .Register(*registry_)),
      pending_(BuildGauge()
                   .Name("nv_inference_pending_request_count")
                   .Help("Instantaneous number of requests queued or executing")
                   .Register(*registry_)),
      request_latency_(BuildHistogram()
                           .Name("nv_inference_request_latency_us")
                           .Help("Distribution of inference request durations in microseconds")
                           .Register(*registry_)),
      queue_latency_(BuildHistogram()
                         .Name("nv_inference_queue_latency_us")
                         .Help("Distribution of inference queuing durations in microseconds")
                         .Register(*registry_)),
      gpu_util_(BuildGauge().Name("nv_gpu_utilization").Help("GPU utilization rate [0.0 - 1.0)").Register(*registry_)),
      gpu_total_(BuildGauge()
                     .Name("nv_gpu_memory_total_bytes")
                     .Help("GPU total memory, in bytes")
                     .Register(*registry_)),
      gpu_used_(BuildGauge()
                    .Name("nv_gpu_memory_used_bytes")
                    .Help("GPU used memory, in bytes")
                    .Register(*registry_)),
      cpu_util_(BuildGauge().Name("nv_cpu_utilization").Help("CPU utilization rate [0.0 - 1.0]").Register(*registry_)),
      cpu_total_(BuildGauge()
                     .Name("nv_cpu_memory_total_bytes")
                     .Help("CPU total memory (RAM), in bytes")
                     .Register(*registry_)),
      cpu_used_(BuildGauge()
                    .Name("nv_cpu_memory_used_bytes")
                    .Help("CPU used memory (RAM), in bytes")
                    .Register(*registry_)) {}

Metrics::ModelSeries& Metrics::Series(const std::string& model, const std::string& version) {
  auto key = std::make_pair(model, version);
  auto it = series_.find(key);
  if (it != series_.end()) return it->second;
  prometheus::Labels labels = {{"model", model}, {"version", version}};
  ModelSeries s{&success_.Add(labels),
                &count_.Add(labels),
                &exec_count_.Add(labels),
                &request_us_.Add(labels),
                &queue_us_.Add(labels),
                &input_us_.Add(labels),
                &infer_us_.Add(labels),
                &output_us_.Add(labels),
                &pending_.Add(labels),
                &request_latency_.Add(labels, LatencyBuckets()),
                &queue_latency_.Add(labels, LatencyBuckets())};
  return series_.emplace(std::move(key), s).first->second;
}

void Metrics::RecordSuccess(const std::string& model, const std::string& version, int64_t batch_size,
                            const InferDurations& d) {
  MutexLock lock(&mu_);
  ModelSeries& s = Series(model, version);
  s.success->Increment();
  s.count->Increment(static_cast<double>(batch_size > 0 ? batch_size : 1));
  s.request_us->Increment(static_cast<double>(std::max<int64_t>(d.request_us, 0)));
  s.queue_us->Increment(static_cast<double>(std::max<int64_t>(d.queue_us, 0)));
  s.input_us->Increment(static_cast<double>(std::max<int64_t>(d.compute_input_us, 0)));
  s.infer_us->Increment(static_cast<double>(std::max<int64_t>(d.compute_infer_us, 0)));
  s.output_us->Increment(static_cast<double>(std::max<int64_t>(d.compute_output_us, 0)));
  s.request_latency->Observe(static_cast<double>(d.request_us));
  s.queue_latency->Observe(static_cast<double>(d.queue_us));
}

void Metrics::RecordFailure(const std::string& model, const std::string& version, std::string_view reason) {
  MutexLock lock(&mu_);
  Series(model, version);  // so the success series exist (at 0) beside the failure
  failure_.Add({{"model", model}, {"version", version}, {"reason", std::string(reason)}}).Increment();
}

void Metrics::RecordExecution(const std::string& model, const std::string& version) {
  MutexLock lock(&mu_);
  Series(model, version).exec_count->Increment();
}

void Metrics::SetPending(const std::string& model, const std::string& version, int64_t n) {
  MutexLock lock(&mu_);
  Series(model, version).pending->Set(static_cast<double>(n));
}

void Metrics::SetGpu(const std::string& uuid, double utilization, int64_t memory_total_bytes,
                     int64_t memory_used_bytes) {
  MutexLock lock(&mu_);
  prometheus::Labels labels = {{"gpu_uuid", uuid}};
  gpu_util_.Add(labels).Set(utilization);
  gpu_total_.Add(labels).Set(static_cast<double>(memory_total_bytes));
  gpu_used_.Add(labels).Set(static_cast<double>(memory_used_bytes));
}

void Metrics::SetHostCpu(double utilization) {
  MutexLock lock(&mu_);
  cpu_util_.Add({}).Set(utilization);
}

void Metrics::SetHostMemory(int64_t total_bytes, int64_t used_bytes) {
  MutexLock lock(&mu_);
  cpu_total_.Add({}).Set(static_cast<double>(total_bytes));
  cpu_used_.Add({}).Set(static_cast<double>(used_bytes));
}

std::string Metrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace ortgpu::serve
