#include "serve/metrics/scheduler_metrics.h"

namespace ortgpu::serve {
namespace {

int64_t Micros(int64_t ns) { return ns > 0 ? ns / 1000 : 0; }

}  // namespace

void SchedulerMetrics::AddPending(const std::string& model, const std::string& version, int64_t delta) {
  MutexLock lock(&mu_);
  // No clamp at 0: the scheduler reports a request's OnQueued before its
  // OnSuccess/OnFailure, so the count never goes below 0; clamping would hide
  // an ordering bug as a gauge stuck too high.
  int64_t& n = pending_[{model, version}];
  n += delta;
  // Set under mu_ so two threads cannot publish their counts out of order.
  metrics_.SetPending(model, version, n);
}

int64_t SchedulerMetrics::pending(const std::string& model, const std::string& version) const {
  MutexLock lock(&mu_);
  auto it = pending_.find({model, version});
  return it == pending_.end() ? 0 : it->second;
}

void SchedulerMetrics::OnQueued(const std::string& model, const std::string& version, size_t) {
  AddPending(model, version, +1);
}

void SchedulerMetrics::OnRejected(const std::string& model, const std::string& version, Code code) {
  if (code == Code::kUnavailable) return;  // retried on the successor version (see header)
  metrics_.RecordFailure(model, version, CodeName(code));
}

void SchedulerMetrics::OnBatch(const std::string& model, const std::string& version, int64_t batch_size,
                               const ExecutionTimes& times, int device) {
  metrics_.RecordExecution(model, version);
  gpu_instances_.RecordExecution(model, version, device, batch_size, times);
}

void SchedulerMetrics::OnSuccess(const std::string& model, const std::string& version, int64_t rows,
                                 int64_t request_ns, int64_t queue_ns, const ExecutionTimes& compute) {
  InferDurations d;
  d.request_us = Micros(request_ns);
  d.queue_us = Micros(queue_ns);
  d.compute_input_us = Micros(compute.compute_input_ns);
  d.compute_infer_us = Micros(compute.compute_infer_ns);
  d.compute_output_us = Micros(compute.compute_output_ns);
  metrics_.RecordSuccess(model, version, rows, d);
  AddPending(model, version, -1);
}

void SchedulerMetrics::OnFailure(const std::string& model, const std::string& version, Code code) {
  metrics_.RecordFailure(model, version, CodeName(code));
  AddPending(model, version, -1);
}

void SchedulerMetrics::OnModelPrecision(const std::string& model, const std::string& version,
                                        const PrecisionFigures& figures) {
  precision_.Record(model, version, figures);
}

void SchedulerMetrics::OnModelMemory(const std::string& model, const std::string& version, const MemoryFigures& figures) {
  memory_.Record(model, version, figures);
}

void SchedulerMetrics::OnUnloadMemory(const std::string& model, const std::string& version, const UnloadMemory& memory) {
  memory_.RecordUnload(model, version, memory);
}

void SchedulerMetrics::OnVersionUnloaded(const std::string& model, const std::string& version) {
  precision_.Remove(model, version);
  memory_.Remove(model, version);
  gpu_instances_.Remove(model, version);
}

}  // namespace ortgpu::serve
