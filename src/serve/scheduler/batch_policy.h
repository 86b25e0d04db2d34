// BatchPolicy: the decisions of the dynamic batcher as pure functions, so the
// rule can be read (and tested) without threads or a clock:
//
//   PlanBatch           when a free worker runs a batch, and which of the
//                       waiting requests it takes (Triton's preferred batch
//                       size rule, below)
//   ExecutedBatchSize   the rows a batch runs as (padding to a preferred size)
//   WarmupBatchSizes    every batch size the batcher can execute, so the
//                       loader warms each one before the model is READY
//
// The rule (Triton's dynamic_batch_scheduler.cc GetDynamicBatch). A free
// worker looks at the requests that can join the oldest one (same BatchKey),
// oldest first, and gathers them while their rows stay within
// max_batch_size. With S_1 < S_2 < ... the row counts of those prefixes:
//
//   1. Some S_k is a preferred batch size: run the largest such prefix, now
//      (every preferred size is honoured, not only the largest).
//   2. The rows waiting pass the largest preferred size (max_batch_size when
//      there are none), or the next joinable request does not fit in
//      max_batch_size: run the largest prefix within the largest preferred
//      size, now; it cannot grow into a preferred size any more.
//   3. The oldest request has waited max_queue_delay (or the delay is 0, or
//      the batcher is stopping): run every gathered request, now.
//   4. Otherwise wait until the oldest request's delay ends (or a request
//      arrives).
//
// While the model's GPU is busy (PlanMode::kGpuBusy: another batch holds
// its GpuTurn) a batch taken now would only wait for the GPU, so it keeps
// growing instead: only rule 2 runs it (the largest preferred size is
// reached, or nothing more fits), and the delay of rule 3 is extended until
// the GPU is free. Under load this keeps every batch full; with the GPU
// idle nothing changes.
//
// One difference from Triton, chosen for shape stability: once the delay has
// passed Triton runs every gathered request even when a prefix of them is a
// preferred size; ortgpu keeps rule 1 first, so an overloaded model (whose
// oldest request is always past its delay) keeps running preferred sizes.
//
// Thread-safe: values and pure functions only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ortgpu::serve {

struct BatchPolicy {
  // Largest batch in rows; 0: the model has no batch dimension and every
  // request runs alone.
  int max_batch_size = 0;
  // Join requests into batches (config dynamic_batching). false: every
  // request runs alone, as its own rows.
  bool dynamic_batching = false;
  // Ascending, unique, each in 1..max_batch_size (Normalized() makes it so).
  std::vector<int> preferred_batch_sizes;
  // How long the oldest request may wait for others to join it; 0: never wait.
  int64_t max_queue_delay_ns = 0;
  // Pad every batch with zero rows to the smallest preferred size that holds
  // it (max_batch_size above the largest), so only those sizes ever run
  // (config parameter pad_to_preferred_batch_size).
  bool pad_to_preferred_batch_size = false;

  // A copy with preferred_batch_sizes sorted, de-duplicated and clipped to
  // 1..max_batch_size.
  BatchPolicy Normalized() const;
  // The largest preferred size, or max_batch_size when there are none.
  int64_t LargestPreferred() const;
};

struct BatchPlan {
  // How many of the candidates (from the front) to run now; 0: wait.
  size_t requests = 0;
  // Their rows (before padding).
  int64_t rows = 0;
  // With requests == 0: the clock time (ns) at which the oldest request's
  // delay ends (kGpuBusy: the next re-check) and the decision must be taken
  // again.
  int64_t wait_until_ns = 0;
};

// Why a plan is asked for.
enum class PlanMode {
  kServing,   // normal operation: the queue delay applies
  kDraining,  // stopping: run what is queued without waiting
  kGpuBusy,   // the model's GPU runs another batch: grow this one (see above)
};
// How long a batch held back by kGpuBusy waits before the plan is made again
// at the latest (the batcher is woken sooner when the GPU is released).
inline constexpr int64_t kGpuBusyRecheckNs = 1'000'000;

// `candidate_rows[i]`: rows of the i-th queued request that can join the
// oldest one, in queue order (candidate_rows[0] is the oldest request's).
// `oldest_enqueue_ns` and `now_ns` on the batcher's clock. `policy` must be
// Normalized(). REQUIRES: candidate_rows non-empty, each in
// 1..max_batch_size when max_batch_size > 0.
BatchPlan PlanBatch(const BatchPolicy& policy, const std::vector<int64_t>& candidate_rows, int64_t oldest_enqueue_ns,
                    int64_t now_ns, PlanMode mode);

// The rows a batch of `rows` rows executes as: `rows`, or with padding the
// smallest preferred size >= rows (max_batch_size past the largest).
int64_t ExecutedBatchSize(const BatchPolicy& policy, int64_t rows);

// The batch sizes the loader warms up: with padding each preferred size and
// max_batch_size; without, every size 1..max_batch_size, or, past
// kMaxWarmupEveryBatchSize, the preferred sizes, the powers of two and
// max_batch_size (`every_size` false then). Empty when max_batch_size is 0.
struct WarmupSizes {
  std::vector<int64_t> sizes;  // ascending
  bool every_size = true;      // false: a bounded subset of 1..max_batch_size
};
inline constexpr int kMaxWarmupEveryBatchSize = 64;
WarmupSizes WarmupBatchSizes(const BatchPolicy& policy);

}  // namespace ortgpu::serve
