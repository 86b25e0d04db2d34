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
// They describe the load that serves: a reload replaces all of a version's
// series (a config without precision leaves none), and an unload removes
// them, so no gauge speaks for a version that is gone (the nv_* counters, by
// contrast, keep their totals).
// Thread-safe; REQUIRES: `metrics` outlives it.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "serve/metrics/metrics.h"
#include "serve/scheduler/scheduler_observer.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

class PrecisionMetrics {
 public:
  explicit PrecisionMetrics(Metrics& metrics);
  // Sets the version's series to `figures`, replacing those of its previous load.
  void Record(const std::string& model, const std::string& version, const PrecisionFigures& figures);
  // Removes the version's series (it unloaded); nothing when it has none.
  void Remove(const std::string& model, const std::string& version);

 private:
  // The series of one version; null where it has none.
  struct VersionSeries {
    prometheus::Gauge* info = nullptr;
    prometheus::Gauge* min_cosine = nullptr;
    prometheus::Gauge* max_rel_error = nullptr;
    prometheus::Gauge* top1 = nullptr;
    prometheus::Gauge* within_budget = nullptr;
  };
  void RemoveLocked(VersionSeries& series);

  prometheus::Family<prometheus::Gauge>& info_;
  prometheus::Family<prometheus::Gauge>& min_cosine_;
  prometheus::Family<prometheus::Gauge>& max_rel_error_;
  prometheus::Family<prometheus::Gauge>& top1_;
  prometheus::Family<prometheus::Gauge>& within_budget_;
  Mutex mu_;
  std::map<std::pair<std::string, std::string>, VersionSeries> series_ GUARDED_BY(mu_);
};

}  // namespace ortgpu::serve
