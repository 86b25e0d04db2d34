#include "serve/scheduler/model_stats.h"

namespace ortgpu::serve {

void ModelStats::RecordSuccess(int64_t request_ns, int64_t queue_ns, const ExecutionTimes& t,
                               int64_t now_ms_since_epoch) {
  MutexLock lock(&mu_);
  s_.success.Add(request_ns);
  s_.queue.Add(queue_ns);
  s_.compute_input.Add(t.compute_input_ns);
  s_.compute_infer.Add(t.compute_infer_ns);
  s_.compute_output.Add(t.compute_output_ns);
  s_.last_inference_ms = now_ms_since_epoch;
}

void ModelStats::RecordFailure(int64_t request_ns, int64_t now_ms_since_epoch) {
  MutexLock lock(&mu_);
  s_.fail.Add(request_ns);
  s_.last_inference_ms = now_ms_since_epoch;
}

void ModelStats::RecordExecution(int64_t executed_rows, int64_t request_rows, const ExecutionTimes& t) {
  MutexLock lock(&mu_);
  ++s_.execution_count;
  s_.inference_count += static_cast<uint64_t>(request_rows);
  auto& b = s_.batches[executed_rows];
  b.compute_input.Add(t.compute_input_ns);
  b.compute_infer.Add(t.compute_infer_ns);
  b.compute_output.Add(t.compute_output_ns);
}

StatsSnapshot ModelStats::Snapshot(const std::string& name, const std::string& version) const {
  MutexLock lock(&mu_);
  StatsSnapshot out = s_;
  out.name = name;
  out.version = version;
  return out;
}

std::map<int64_t, uint64_t> ModelStats::BatchSizes() const {
  MutexLock lock(&mu_);
  std::map<int64_t, uint64_t> out;
  for (const auto& [size, f] : s_.batches) out[size] = f.compute_infer.count;
  return out;
}

uint64_t ModelStats::execution_count() const {
  MutexLock lock(&mu_);
  return s_.execution_count;
}

}  // namespace ortgpu::serve
