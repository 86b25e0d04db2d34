// BatchPolicy: the decisions of the dynamic batcher as pure functions, so the
// rule can be read (and tested) without threads or a clock:
//
//   PlanBatch           when a free worker runs a batch, and which of the
//                       waiting requests it takes (Triton's preferred batch
//                       size rule, below)
//   ExecutedBatchSize   the rows a batch runs as: padded to a preferred size
//                       when padding pays, its own (light) size otherwise
//   WarmupBatchSizes    every batch size the batcher can execute, so the
//                       loader warms (and measures) each one before the
//                       model is READY
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
// Padding pays only when it costs about nothing (issue 25). With
// pad_to_preferred_batch_size a batch is padded to the preferred size when
// the padded size costs about the same as the batch's own light size
// (kPaddingCostRatio, measured at warm-up: BatchCosts). Otherwise the batch
// runs at the smallest light size that holds it (LightBatchSizes: the powers
// of two below the largest preferred size, each warmed, with a session and
// CUDA graph of its own on a GPU), so one request gets batch-1 latency and a
// batch of 3 runs as 4, busy GPU or not. (Until run l4 a busy GPU padded
// every batch to the preferred size: at two connections ResNet-50 [128] ran
// each request as a batch of 128, 90 requests/s; docs/BENCHMARKS.md.)
// Without a measured cost table every batch is padded, as before.
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
#include <string>
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
  // With padding: pad only when it pays (ExecutedBatchSize), and warm the
  // light sizes an instance runs instead (config parameter
  // adaptive_padding, default true). false: every batch is padded and only
  // the padded sizes are warmed.
  bool adaptive_padding = true;

  // A copy with preferred_batch_sizes sorted, de-duplicated and clipped to
  // 1..max_batch_size.
  BatchPolicy Normalized() const;
  // The largest preferred size, or max_batch_size when there are none.
  int64_t LargestPreferred() const;
  // The sizes an instance runs unpadded batches at: with padding and
  // adaptive_padding, the powers of two (1, 2, 4, ...) below the largest
  // preferred size that are not preferred sizes; empty otherwise. A batch
  // of rows between two of them runs at the next one up: on CUDA every
  // change of shape of a session costs ~100 ms (docs/BENCHMARKS.md), so
  // only warmed sizes, each with a session of its own, ever run.
  std::vector<int64_t> LightBatchSizes() const;
};

// What running a batch of each executed size costs on one instance, on its
// own path (joining the rows, copies, the run, fetching the outputs): the
// median of kBatchCostRuns runs after warm-up (MeasureBatchCosts,
// batch_costs.h). Written once before the instance serves; read-only after.
struct BatchCosts {
  std::vector<int64_t> sizes;  // ascending
  std::vector<int64_t> ns;     // ns[i]: the median run of sizes[i]
  // The measured cost of `rows`, or -1 when that size was not measured.
  int64_t Of(int64_t rows) const;
  bool empty() const { return sizes.empty(); }
};

// "About the same": padding to a size whose measured cost is at most 10%
// (or kPaddingCostSlackNs) above the batch's own light size costs nothing
// worth keeping batch-1 latency for, so the batch is padded (and runs a
// size that is warm on every path).
inline constexpr double kPaddingCostRatio = 1.10;
inline constexpr int64_t kPaddingCostSlackNs = 5'000;
// Whether running `padded_ns` instead of `unpadded_ns` costs about the same.
bool CostsAboutTheSame(int64_t padded_ns, int64_t unpadded_ns);

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

// The size padding fills a batch of `rows` rows up to: `rows`, or with
// padding the smallest preferred size >= rows (max_batch_size past the
// largest).
int64_t PaddedBatchSize(const BatchPolicy& policy, int64_t rows);

// The rows a batch of `rows` rows executes as (issue 25: pad only when it
// pays). Without padding: `rows`. With padding, PaddedBatchSize when
//   - adaptive_padding is off, or `costs` is null (not measured: a CPU
//     runner the loader did not measure, a fake), or either size's cost is
//     unknown: padding as before, the safe choice on a GPU, where only the
//     warmed padded sizes are known not to pay a cold start, or
//   - the padded size costs about the same as the light size
//     (CostsAboutTheSame);
// otherwise the smallest light size >= rows (LightBatchSizes) below the
// padded size. `policy` must be Normalized().
int64_t ExecutedBatchSize(const BatchPolicy& policy, int64_t rows, const BatchCosts* costs);

// For the log and the start-up summary: what a batch of each light size
// runs as, with the measured costs, e.g. "batches run unpadded at
// 1 (1.21 ms), 2 (1.30 ms); padded: 16 -> 32 (4.10 ms, within 10% of
// 3.90 ms); preferred: 32". Empty without padding.
std::string DescribePadding(const BatchPolicy& policy, const BatchCosts* costs);

// The batch sizes the loader warms up: with padding each preferred size,
// max_batch_size and the light sizes (LightBatchSizes); without, every size 1..max_batch_size, or, past
// kMaxWarmupEveryBatchSize, the preferred sizes, the powers of two and
// max_batch_size (`every_size` false then). Empty when max_batch_size is 0.
struct WarmupSizes {
  std::vector<int64_t> sizes;  // ascending
  bool every_size = true;      // false: a bounded subset of 1..max_batch_size
};
inline constexpr int kMaxWarmupEveryBatchSize = 64;
WarmupSizes WarmupBatchSizes(const BatchPolicy& policy);

}  // namespace ortgpu::serve
