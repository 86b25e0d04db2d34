#include "perf/arrivals.h"

#include <algorithm>
#include <string>

namespace ortgpu::perf {

std::string_view DistributionName(Distribution d) { return d == Distribution::kPoisson ? "poisson" : "constant"; }

Expected<Distribution> ParseDistribution(std::string_view name) {
  if (name == "constant") return Distribution::kConstant;
  if (name == "poisson") return Distribution::kPoisson;
  return InvalidArgument("--request-distribution '" + std::string(name) + "' is not one of: constant, poisson");
}

ArrivalSchedule::ArrivalSchedule(double rate_per_s, Distribution distribution, uint64_t seed)
    : mean_gap_ns_(1e9 / rate_per_s), distribution_(distribution), rng_(seed) {}

int64_t ArrivalSchedule::NextGapNs() {
  const double gap = distribution_ == Distribution::kPoisson ? exponential_(rng_) * mean_gap_ns_ : mean_gap_ns_;
  return std::max<int64_t>(1, static_cast<int64_t>(gap));
}

}  // namespace ortgpu::perf
