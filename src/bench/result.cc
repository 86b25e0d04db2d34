#include "bench/result.h"

#include <algorithm>

namespace ortgpu::bench {

std::optional<BatchAndConcurrency> SmallestBatchAndConcurrency(
    const BenchReport& report, const std::function<bool(const ConfigResult&)>& include) {
  std::optional<BatchAndConcurrency> smallest;
  for (const auto& r : report.results) {
    if (!include(r)) continue;
    if (!smallest) {
      smallest = BatchAndConcurrency{r.config.batch, r.config.concurrency};
      continue;
    }
    smallest->batch = std::min(smallest->batch, r.config.batch);
    smallest->concurrency = std::min(smallest->concurrency, r.config.concurrency);
  }
  return smallest;
}

std::string ConfigurationLabel(const Configuration& c) {
  std::string label = c.variant.name + " batch " + std::to_string(c.batch);
  if (c.concurrency > 1) label += " concurrency " + std::to_string(c.concurrency);
  return label;
}

}  // namespace ortgpu::bench
