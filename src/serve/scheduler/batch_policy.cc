#include "serve/scheduler/batch_policy.h"

#include <algorithm>

#include <fmt/format.h>

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

std::vector<int64_t> BatchPolicy::LightBatchSizes() const {
  std::vector<int64_t> sizes;
  if (!pad_to_preferred_batch_size || !adaptive_padding || max_batch_size <= 0) return sizes;
  for (int64_t b = 1; b < LargestPreferred(); b *= 2) {
    if (!std::binary_search(preferred_batch_sizes.begin(), preferred_batch_sizes.end(), b)) sizes.push_back(b);
  }
  return sizes;
}

int64_t BatchCosts::Of(int64_t rows) const {
  auto it = std::lower_bound(sizes.begin(), sizes.end(), rows);
  return it != sizes.end() && *it == rows ? ns[static_cast<size_t>(it - sizes.begin())] : -1;
}

bool CostsAboutTheSame(int64_t padded_ns, int64_t unpadded_ns) {
  const auto allowed = static_cast<int64_t>(static_cast<double>(unpadded_ns) * kPaddingCostRatio);
  return padded_ns <= std::max(allowed, unpadded_ns + kPaddingCostSlackNs);
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

int64_t PaddedBatchSize(const BatchPolicy& policy, int64_t rows) {
  if (!policy.pad_to_preferred_batch_size || policy.max_batch_size <= 0) return rows;
  const auto& preferred = policy.preferred_batch_sizes;
  auto it = std::lower_bound(preferred.begin(), preferred.end(), rows);
  return it != preferred.end() ? *it : std::max<int64_t>(rows, policy.max_batch_size);
}

namespace {

// The smallest light size in [rows, below): a power of two below the
// largest preferred size and not itself preferred (LightBatchSizes, without
// building the list: this runs for every batch). 0 when there is none.
int64_t LightSizeFor(const BatchPolicy& policy, int64_t rows, int64_t below) {
  const auto& preferred = policy.preferred_batch_sizes;
  for (int64_t b = 1; b < below && b < policy.LargestPreferred(); b *= 2) {
    if (b >= rows && !std::binary_search(preferred.begin(), preferred.end(), b)) return b;
  }
  return 0;
}

}  // namespace

int64_t ExecutedBatchSize(const BatchPolicy& policy, int64_t rows, const BatchCosts* costs) {
  const int64_t padded = PaddedBatchSize(policy, rows);
  if (padded == rows || !policy.adaptive_padding || costs == nullptr) return padded;
  const int64_t light = LightSizeFor(policy, rows, padded);
  if (light == 0) return padded;
  const int64_t padded_ns = costs->Of(padded), light_ns = costs->Of(light);
  if (padded_ns < 0 || light_ns < 0 || CostsAboutTheSame(padded_ns, light_ns)) return padded;
  return light;
}

std::string DescribePadding(const BatchPolicy& policy, const BatchCosts* costs) {
  if (!policy.pad_to_preferred_batch_size || policy.max_batch_size <= 0) return "";
  auto ms = [&](int64_t rows) { return fmt::format("{:.2f} ms", static_cast<double>(costs->Of(rows)) / 1e6); };
  std::string largest = std::to_string(PaddedBatchSize(policy, 1));
  const std::vector<int64_t> light = policy.LightBatchSizes();
  if (light.empty() || costs == nullptr) {
    return "every batch padded to the preferred sizes" +
           std::string(!policy.adaptive_padding ? " (adaptive_padding off)"
                       : light.empty()          ? ""
                                                : " (batch costs not measured)");
  }
  std::string unpadded, padded;
  for (int64_t rows : light) {
    const int64_t runs = ExecutedBatchSize(policy, rows, costs);
    if (runs == rows) {
      unpadded += fmt::format("{}{} ({})", unpadded.empty() ? "" : ", ", rows, ms(rows));
    } else {
      const int64_t own = costs->Of(rows);
      padded += fmt::format("{}{} -> {} ({}{})", padded.empty() ? "" : ", ", rows, runs, ms(runs),
                            own < 0 ? ", not measured" : ", about the same as " + ms(rows));
    }
  }
  std::string out = unpadded.empty() ? std::string("every batch is padded, each size costs about the same")
                                     : "batches run unpadded at " + unpadded;
  if (!padded.empty()) out += "; padded: " + padded;
  std::string targets;
  for (int b : policy.preferred_batch_sizes) {
    targets += fmt::format("{}{}{}", targets.empty() ? "" : ", ", b,
                           costs->Of(b) >= 0 ? " (" + ms(b) + ")" : std::string());
  }
  return out + "; preferred: " + (targets.empty() ? largest : targets);
}

WarmupSizes WarmupBatchSizes(const BatchPolicy& policy) {
  WarmupSizes out;
  const int64_t mbs = policy.max_batch_size;
  if (mbs <= 0) return out;
  if (policy.pad_to_preferred_batch_size) {
    out.sizes.assign(policy.preferred_batch_sizes.begin(), policy.preferred_batch_sizes.end());
    out.sizes.push_back(mbs);
    const std::vector<int64_t> light = policy.LightBatchSizes();
    out.sizes.insert(out.sizes.end(), light.begin(), light.end());
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
