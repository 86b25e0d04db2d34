// The precision each loaded version runs in and its accuracy against
// float32 (config parameter precision; serve/repository/model_precision.h),
// as Prometheus gauges in the server's Metrics registry:
//   ortgpu_model_precision_info{model,version,precision}  1 for the version's precision
//   ortgpu_model_accuracy_min_cosine{model,version}       lowest row cosine of any output
//   ortgpu_model_accuracy_max_rel_error{model,version}    max |a - r| / max |r| over outputs
//   ortgpu_model_accuracy_top1{model,version}             lowest top-1 agreement (1 without classifiers)
//   ortgpu_model_accuracy_within_budget{model,version}    1 within the budget, 0 outside (precision_check warn)
// The accuracy series exist for versions whose accuracy was measured (fp16,
// mixed); the info series for every version whose config sets precision.
// Thread-safe; REQUIRES: `metrics` outlives it.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "serve/metrics/metrics.h"
#include "serve/scheduler/scheduler_observer.h"

namespace ortgpu::serve {

class PrecisionMetrics {
 public:
  explicit PrecisionMetrics(Metrics& metrics);
  // Sets the version's series (a reload in another precision replaces its info series).
  void Record(const std::string& model, const std::string& version, const PrecisionFigures& figures);

 private:
  prometheus::Family<prometheus::Gauge>& info_;
  prometheus::Family<prometheus::Gauge>& min_cosine_;
  prometheus::Family<prometheus::Gauge>& max_rel_error_;
  prometheus::Family<prometheus::Gauge>& top1_;
  prometheus::Family<prometheus::Gauge>& within_budget_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, prometheus::Gauge*> info_of_;  // guarded by mu_
};

}  // namespace ortgpu::serve
