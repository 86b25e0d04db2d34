#include "serve/scheduler/batch_policy.h"

#include <algorithm>

namespace ortgpu::serve {

BatchPolicy BatchPolicy::Normalized() const {
  BatchPolicy p = *this;
  std::vector<int>& sizes = p.preferred_batch_sizes;
  sizes.erase(std::remove_if(sizes.begin(), sizes.end(), [&](int b) { return b < 1 || b > max_batch_size; }),
              sizes.end());
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return p;
}

int64_t BatchPolicy::LargestPreferred() const {
  return preferred_batch_sizes.empty() ? max_batch_size : preferred_batch_sizes.back();
}

BatchPlan PlanBatch(const BatchPolicy& policy, const std::vector<int64_t>& candidate_rows, int64_t oldest_enqueue_ns,
                    int64_t now_ns, PlanMode mode) {
  if (policy.max_batch_size <= 0 || !policy.dynamic_batching) return {1, candidate_rows.front(), 0};
  const auto& preferred = policy.preferred_batch_sizes;
  const int64_t largest_preferred = policy.LargestPreferred();
  // Gather the prefix that fits in max_batch_size, remembering the largest
  // prefix that is a preferred size and the largest within the largest one.
  size_t gathered = 0, at_preferred = 0, within_largest = 0;
  int64_t rows = 0, rows_at_preferred = 0, rows_within_largest = 0;
  for (int64_t r : candidate_rows) {
    if (gathered > 0 && rows + r > policy.max_batch_size) break;
    rows += r;
    ++gathered;
    if (std::binary_search(preferred.begin(), preferred.end(), rows)) {
      at_preferred = gathered;
      rows_at_preferred = rows;
    }
    if (rows <= largest_preferred) {
      within_largest = gathered;
      rows_within_largest = rows;
    }
  }
  const bool gpu_busy = mode == PlanMode::kGpuBusy;
  // Rule 1: a preferred size is reached (while the GPU is busy, only the
  // largest one, in rule 2).
  if (at_preferred > 0 && !gpu_busy) return {at_preferred, rows_at_preferred, 0};
  // Rule 2: the batch cannot grow into a preferred size any more.
  const bool next_does_not_fit = gathered < candidate_rows.size();
  if (rows > largest_preferred) {
    // The oldest request alone may pass it: it then runs alone.
    return within_largest > 0 ? BatchPlan{within_largest, rows_within_largest, 0}
                              : BatchPlan{1, candidate_rows.front(), 0};
  }
  if (rows >= largest_preferred || next_does_not_fit) return {gathered, rows, 0};
  if (gpu_busy) return {0, 0, now_ns + kGpuBusyRecheckNs};
  // Rule 3: the oldest request has waited long enough.
  const int64_t wait_until = oldest_enqueue_ns + policy.max_queue_delay_ns;
  if (mode == PlanMode::kDraining || policy.max_queue_delay_ns <= 0 || now_ns >= wait_until) {
    return {gathered, rows, 0};
  }
  // Rule 4: wait for more rows.
  return {0, 0, wait_until};
}

int64_t ExecutedBatchSize(const BatchPolicy& policy, int64_t rows) {
  if (!policy.pad_to_preferred_batch_size || policy.max_batch_size <= 0) return rows;
  const auto& preferred = policy.preferred_batch_sizes;
  auto it = std::lower_bound(preferred.begin(), preferred.end(), rows);
  return it != preferred.end() ? *it : std::max<int64_t>(rows, policy.max_batch_size);
}

WarmupSizes WarmupBatchSizes(const BatchPolicy& policy) {
  WarmupSizes out;
  const int64_t mbs = policy.max_batch_size;
  if (mbs <= 0) return out;
  if (policy.pad_to_preferred_batch_size) {
    out.sizes.assign(policy.preferred_batch_sizes.begin(), policy.preferred_batch_sizes.end());
    out.sizes.push_back(mbs);
  } else if (mbs <= kMaxWarmupEveryBatchSize) {
    for (int64_t b = 1; b <= mbs; ++b) out.sizes.push_back(b);
  } else {
    out.every_size = false;
    out.sizes.assign(policy.preferred_batch_sizes.begin(), policy.preferred_batch_sizes.end());
    for (int64_t b = 1; b < mbs; b *= 2) out.sizes.push_back(b);
    out.sizes.push_back(mbs);
  }
  std::sort(out.sizes.begin(), out.sizes.end());
  out.sizes.erase(std::unique(out.sizes.begin(), out.sizes.end()), out.sizes.end());
  return out;
}

}  // namespace ortgpu::serve
