#include "serve/scheduler/model_stats.h"

namespace ortgpu::serve {
namespace {

nlohmann::json ToJson(const Duration& d) { return {{"count", d.count}, {"ns", d.ns}}; }

}  // namespace

void ModelStats::RecordSuccess(int64_t request_ns, int64_t queue_ns, const ExecutionTimes& t,
                               int64_t now_ms_since_epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  success_.Add(request_ns);
  queue_.Add(queue_ns);
  compute_input_.Add(t.compute_input_ns);
  compute_infer_.Add(t.compute_infer_ns);
  compute_output_.Add(t.compute_output_ns);
  last_inference_ms_ = now_ms_since_epoch;
}

void ModelStats::RecordFailure(int64_t request_ns, int64_t now_ms_since_epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_.Add(request_ns);
  last_inference_ms_ = now_ms_since_epoch;
}

void ModelStats::RecordExecution(int64_t executed_rows, int64_t request_rows, const ExecutionTimes& t) {
  std::lock_guard<std::mutex> lock(mu_);
  ++execution_count_;
  inference_count_ += static_cast<uint64_t>(request_rows);
  auto& b = batches_[executed_rows];
  b.compute_input.Add(t.compute_input_ns);
  b.compute_infer.Add(t.compute_infer_ns);
  b.compute_output.Add(t.compute_output_ns);
}

nlohmann::json ModelStats::ToJson(const std::string& name, const std::string& version) const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json batch = nlohmann::json::array();
  for (const auto& [size, f] : batches_) {
    batch.push_back({{"batch_size", size},
                     {"compute_input", serve::ToJson(f.compute_input)},
                     {"compute_infer", serve::ToJson(f.compute_infer)},
                     {"compute_output", serve::ToJson(f.compute_output)}});
  }
  return {{"name", name},
          {"version", version},
          {"last_inference", last_inference_ms_},
          {"inference_count", inference_count_},
          {"execution_count", execution_count_},
          {"inference_stats",
           {{"success", serve::ToJson(success_)},
            {"fail", serve::ToJson(fail_)},
            {"queue", serve::ToJson(queue_)},
            {"compute_input", serve::ToJson(compute_input_)},
            {"compute_infer", serve::ToJson(compute_infer_)},
            {"compute_output", serve::ToJson(compute_output_)}}},
          {"batch_stats", batch}};
}

std::map<int64_t, uint64_t> ModelStats::BatchSizes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int64_t, uint64_t> out;
  for (const auto& [size, f] : batches_) out[size] = f.compute_infer.count;
  return out;
}

uint64_t ModelStats::execution_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return execution_count_;
}

}  // namespace ortgpu::serve
