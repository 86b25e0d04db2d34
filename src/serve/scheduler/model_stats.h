// ModelStats: the counters behind Triton's statistics extension for one
// model version (inference/execution counts, cumulative durations, per batch
// size figures). Written by the version's worker threads and read by the
// statistics endpoints, as a StatsSnapshot (a value, which the HTTP and gRPC
// front ends turn into their own forms: protocol/statistics_json.h,
// grpc/grpc_codec.h); every method takes the internal mutex, so it is safe
// from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sys/mutex.h"

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

struct BatchFigures {
  Duration compute_input, compute_infer, compute_output;
};

// One entry of Triton's memory_usage (the statistics extension's
// MemoryUsage): `type` "GPU" or "CPU" with the device `id` holds the
// version's total there; ortgpu adds its parts as "<TYPE>_WEIGHTS",
// "<TYPE>_ARENA_RESERVED", "<TYPE>_ARENA_IN_USE" and "<TYPE>_OTHER"
// (docs/MEMORY.md): a Triton client reads the entries of type exactly GPU.
struct MemoryUsage {
  std::string type;
  int64_t id = 0;
  uint64_t byte_size = 0;
};

// One version's statistics at one moment, as Triton's ModelStatistics
// message holds them.
struct StatsSnapshot {
  std::string name;
  std::string version;
  int64_t last_inference_ms = 0;  // since the epoch; 0: never
  uint64_t inference_count = 0;   // rows
  uint64_t execution_count = 0;
  Duration success, fail, queue, compute_input, compute_infer, compute_output;
  std::map<int64_t, BatchFigures> batches;  // executed rows (padding included) -> figures
  std::vector<MemoryUsage> memory_usage;     // measured at load (the server core fills it)
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

  // The figures so far, labelled `name` and `version`.
  StatsSnapshot Snapshot(const std::string& name, const std::string& version) const;

  // Batch sizes executed (rows, padding included), size -> number of
  // executions (for tests and logs).
  std::map<int64_t, uint64_t> BatchSizes() const;
  uint64_t execution_count() const;

 private:
  mutable Mutex mu_;
  StatsSnapshot s_ GUARDED_BY(mu_);  // name and version unset
};

}  // namespace ortgpu::serve
