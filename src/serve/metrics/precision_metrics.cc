#include "serve/metrics/precision_metrics.h"

namespace ortgpu::serve {
namespace {

prometheus::Family<prometheus::Gauge>& Gauge(Metrics& metrics, const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(metrics.registry());
}

}  // namespace

PrecisionMetrics::PrecisionMetrics(Metrics& metrics)
    : info_(Gauge(metrics, "ortgpu_model_precision_info",
                  "1 for the precision the model version runs in (config parameter precision)")),
      min_cosine_(Gauge(metrics, "ortgpu_model_accuracy_min_cosine",
                        "Lowest row cosine similarity to float32 of any output, on the warm-up inputs")),
      max_rel_error_(Gauge(metrics, "ortgpu_model_accuracy_max_rel_error",
                           "Largest error against float32 as a share of the output's range, on the warm-up inputs")),
      top1_(Gauge(metrics, "ortgpu_model_accuracy_top1",
                  "Lowest top-1 agreement with float32 of a classifier output (1 without classifiers)")),
      within_budget_(Gauge(metrics, "ortgpu_model_accuracy_within_budget",
                           "1 when the version is within its accuracy budget, 0 when served outside it")) {}

void PrecisionMetrics::RemoveLocked(VersionSeries& s) {
  if (s.info != nullptr) info_.Remove(s.info);
  if (s.min_cosine != nullptr) min_cosine_.Remove(s.min_cosine);
  if (s.max_rel_error != nullptr) max_rel_error_.Remove(s.max_rel_error);
  if (s.top1 != nullptr) top1_.Remove(s.top1);
  if (s.within_budget != nullptr) within_budget_.Remove(s.within_budget);
  s = VersionSeries{};
}

void PrecisionMetrics::Record(const std::string& model, const std::string& version, const PrecisionFigures& f) {
  MutexLock lock(&mu_);
  auto it = series_.find({model, version});
  if (it != series_.end()) {
    RemoveLocked(it->second);
    series_.erase(it);
  }
  if (f.precision.empty()) return;
  VersionSeries& s = series_[{model, version}];
  const prometheus::Labels labels = {{"model", model}, {"version", version}};
  prometheus::Labels with_precision = labels;
  with_precision["precision"] = f.precision;
  s.info = &info_.Add(with_precision);
  s.info->Set(1);
  if (!f.checked) return;
  s.min_cosine = &min_cosine_.Add(labels);
  s.min_cosine->Set(f.min_cosine);
  s.max_rel_error = &max_rel_error_.Add(labels);
  s.max_rel_error->Set(f.max_rel_error);
  s.top1 = &top1_.Add(labels);
  s.top1->Set(f.top1);
  s.within_budget = &within_budget_.Add(labels);
  s.within_budget->Set(f.within_budget ? 1 : 0);
}

void PrecisionMetrics::Remove(const std::string& model, const std::string& version) {
  MutexLock lock(&mu_);
  auto it = series_.find({model, version});
  if (it == series_.end()) return;
  RemoveLocked(it->second);
  series_.erase(it);
}

}  // namespace ortgpu::serve
