#include "serve/scheduler/batch_costs.h"

#include <algorithm>
#include <string>

namespace ortgpu::serve {

Expected<BatchCosts> MeasureBatchCosts(InstanceRunner& runner, const std::vector<Tensor>& row,
                                       const std::vector<int64_t>& sizes, const Clock& clock, int runs) {
  BatchCosts costs;
  std::vector<int64_t> samples;
  for (int64_t n : sizes) {
    const std::vector<const std::vector<Tensor>*> repeated(static_cast<size_t>(n), &row);
    samples.clear();
    for (int k = 0; k < std::max(runs, 1); ++k) {
      int64_t ready_ns = 0;
      const int64_t start = clock.NowNanos();
      auto out = runner.RunBatch(repeated, 0, clock, ready_ns);
      const int64_t end = clock.NowNanos();
      if (!out.ok()) return out.status().WithContext("timing batch size " + std::to_string(n));
      samples.push_back(end - start);
    }
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    costs.sizes.push_back(n);
    costs.ns.push_back(samples[samples.size() / 2]);
  }
  return costs;
}

}  // namespace ortgpu::serve
