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

void PrecisionMetrics::Record(const std::string& model, const std::string& version, const PrecisionFigures& f) {
  if (f.precision.empty()) return;
  std::lock_guard lock(mu_);
  const prometheus::Labels labels = {{"model", model}, {"version", version}};
  auto& info = info_of_[{model, version}];
  if (info != nullptr) info_.Remove(info);
  prometheus::Labels with_precision = labels;
  with_precision["precision"] = f.precision;
  info = &info_.Add(with_precision);
  info->Set(1);
  if (!f.checked) return;
  min_cosine_.Add(labels).Set(f.min_cosine);
  max_rel_error_.Add(labels).Set(f.max_rel_error);
  top1_.Add(labels).Set(f.top1);
  within_budget_.Add(labels).Set(f.within_budget ? 1 : 0);
}

}  // namespace ortgpu::serve
