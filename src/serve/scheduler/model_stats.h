// ModelStats: the counters behind Triton's statistics extension for one
// model version (inference/execution counts, cumulative durations, per batch
// size figures). Written by the version's worker threads and read by the
// statistics endpoint; every method takes the internal mutex, so it is safe
// from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace ortgpu::serve {

struct Duration {
  uint64_t count = 0;
  uint64_t ns = 0;
  void Add(int64_t d) { ++count; ns += d > 0 ? static_cast<uint64_t>(d) : 0; }
};

struct ExecutionTimes {
  int64_t compute_input_ns = 0;
  int64_t compute_infer_ns = 0;
  int64_t compute_output_ns = 0;
};

class ModelStats {
 public:
  // One request finished successfully.
  void RecordSuccess(int64_t request_ns, int64_t queue_ns, const ExecutionTimes& t, int64_t now_ms_since_epoch);
  void RecordFailure(int64_t request_ns, int64_t now_ms_since_epoch);
  // One execution that ran `executed_rows` rows (padding included; the key
  // of its batch_stats entry, as Triton's batch_size is the executed batch
  // size) for requests holding `request_rows` of them (added to
  // inference_count: each row is one inference, as Triton counts them).
  void RecordExecution(int64_t executed_rows, int64_t request_rows, const ExecutionTimes& t);

  // {"name", "version", "last_inference", "inference_count",
  //  "execution_count", "inference_stats": {...}, "batch_stats": [...]}.
  nlohmann::json ToJson(const std::string& name, const std::string& version) const;

  // Batch sizes executed (rows, padding included), size -> number of
  // executions (for tests and logs).
  std::map<int64_t, uint64_t> BatchSizes() const;
  uint64_t execution_count() const;

 private:
  struct BatchFigures {
    Duration compute_input, compute_infer, compute_output;
  };
  mutable std::mutex mu_;
  int64_t last_inference_ms_ = 0;    // guarded by mu_
  uint64_t inference_count_ = 0;     // guarded by mu_ (rows)
  uint64_t execution_count_ = 0;     // guarded by mu_
  Duration success_, fail_, queue_, compute_input_, compute_infer_, compute_output_;  // guarded by mu_
  std::map<int64_t, BatchFigures> batches_;  // guarded by mu_
};

}  // namespace ortgpu::serve
