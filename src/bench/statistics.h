// Statistics: the pure function that turns the raw latency samples of one
// benchmark configuration into the figures bench reports (percentiles,
// throughput, a stability verdict). No I/O and no clock: the same samples
// always give the same numbers, so it is unit-tested on hand-made samples.
// Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ortgpu::bench {

// The latency figures of one configuration, in milliseconds unless named
// otherwise. All zero when there were no samples.
struct LatencyStats {
  int64_t count = 0;  // runs measured (warm-up excluded)
  double min_ms = 0;
  double mean_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p95_ms = 0;
  double p99_ms = 0;
  double p999_ms = 0;
  double max_ms = 0;
  double stddev_ms = 0;  // population standard deviation
  double runs_per_s = 0;   // count / wall_s
  double items_per_s = 0;  // runs_per_s * batch
  // The stability check (perf_analyzer's): the mean latency of each of the
  // last `windows` windows is within `tolerance` of their common mean.
  bool stable = false;
  std::string stability_note;  // why it is not stable, or "" when it is
};

struct StatisticsOptions {
  int windows = 3;          // windows compared by the stability check
  double tolerance = 0.10;  // largest allowed relative spread of window means
  int64_t min_samples_per_window = 5;  // fewer samples: "too few samples to judge"
};

// Percentile `p` (0..100) of `sorted` by linear interpolation between
// closest ranks (numpy's default). REQUIRES: sorted is ascending, non-empty.
double Percentile(const std::vector<double>& sorted, double p);

// `samples_ms` in the order they were taken (order matters for stability);
// `wall_s` is the wall time over which they were taken (with concurrency,
// less than their sum); `batch` the items per run.
LatencyStats ComputeStatistics(const std::vector<double>& samples_ms, double wall_s, int64_t batch,
                               const StatisticsOptions& options = {});

// Counts of samples per bin over [min, max] in `bins` equal bins, for the
// latency histogram. Empty when `samples_ms` is empty. REQUIRES: bins > 0.
struct Histogram {
  double lo_ms = 0;
  double hi_ms = 0;
  std::vector<int64_t> counts;
};
Histogram MakeHistogram(const std::vector<double>& samples_ms, int bins);

}  // namespace ortgpu::bench
