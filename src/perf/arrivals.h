// Arrivals: when the request-rate mode sends its requests. A schedule of
// gaps between sends, either constant (1/rate) or Poisson (exponential gaps
// of mean 1/rate, as perf_analyzer's --request-distribution poisson), drawn
// from a seed so a run can be repeated. Value type; thread-compatible (one
// schedule per I/O thread).
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

#include "status/expected.h"

namespace ortgpu::perf {

enum class Distribution { kConstant, kPoisson };
std::string_view DistributionName(Distribution d);  // "constant", "poisson"
Expected<Distribution> ParseDistribution(std::string_view name);

class ArrivalSchedule {
 public:
  // REQUIRES: rate_per_s > 0.
  ArrivalSchedule(double rate_per_s, Distribution distribution, uint64_t seed);
  // Nanoseconds from the previous send to the next (always >= 1).
  int64_t NextGapNs();

 private:
  double mean_gap_ns_;
  Distribution distribution_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> exponential_{1.0};
};

}  // namespace ortgpu::perf
