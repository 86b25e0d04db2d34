// The precision and accuracy gauges of a served version (issue 26, part 5):
// what they show for a checked and an unchecked load, and that they follow
// the load that serves: a reload replaces them, an unload removes them.
#include "serve/metrics/precision_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/metrics/scheduler_metrics.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

PrecisionFigures Checked(double min_cosine, bool within_budget) {
  PrecisionFigures f;
  f.precision = "fp16";
  f.checked = true;
  f.min_cosine = min_cosine;
  f.max_rel_error = 0.25;
  f.top1 = 1;
  f.within_budget = within_budget;
  return f;
}

PrecisionFigures Unchecked(const std::string& precision) {
  PrecisionFigures f;
  f.precision = precision;
  return f;
}

TEST(PrecisionMetricsTest, ACheckedVersionShowsItsPrecisionAndAccuracy) {
  Metrics metrics;
  SchedulerMetrics observer(metrics);
  observer.OnModelPrecision("m", "1", Checked(0.5, false));
  observer.OnModelPrecision("t", "2", Unchecked("tf32"));
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_precision_info{model="m",precision="fp16",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_accuracy_min_cosine{model="m",version="1"} 0.5)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_accuracy_max_rel_error{model="m",version="1"} 0.25)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_accuracy_top1{model="m",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_accuracy_within_budget{model="m",version="1"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_precision_info{model="t",precision="tf32",version="2"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(ortgpu_model_accuracy_min_cosine{model="t")")));
}

TEST(PrecisionMetricsTest, AReloadReplacesTheSeriesOfTheLoadBefore) {
  Metrics metrics;
  SchedulerMetrics observer(metrics);
  observer.OnModelPrecision("m", "1", Checked(0.5, false));
  observer.OnModelPrecision("m", "1", Unchecked("fp32"));
  std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_precision_info{model="m",precision="fp32",version="1"} 1)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(precision="fp16")")));
  EXPECT_THAT(text, Not(HasSubstr(R"(ortgpu_model_accuracy_within_budget{model="m")")));

  // A config that no longer sets precision leaves no series.
  observer.OnModelPrecision("m", "1", Unchecked(""));
  EXPECT_THAT(metrics.Serialize(), Not(HasSubstr(R"(ortgpu_model_precision_info{model="m")")));
}

TEST(PrecisionMetricsTest, AnUnloadedVersionLeavesNoSeriesAndOtherVersionsStay) {
  Metrics metrics;
  SchedulerMetrics observer(metrics);
  observer.OnModelPrecision("m", "1", Checked(0.75, true));
  observer.OnModelPrecision("m", "2", Checked(0.875, true));
  observer.OnSuccess("m", "1", 1, 1000, 0, {});
  observer.OnVersionUnloaded("m", "1");
  observer.OnVersionUnloaded("never", "1");  // no series: nothing happens
  const std::string text = metrics.Serialize();
  for (const char* name : {"ortgpu_model_precision_info", "ortgpu_model_accuracy_min_cosine",
                           "ortgpu_model_accuracy_max_rel_error", "ortgpu_model_accuracy_top1",
                           "ortgpu_model_accuracy_within_budget"}) {
    EXPECT_THAT(text, Not(HasSubstr(std::string(name) + R"({model="m",version="1"})"))) << name;
  }
  EXPECT_THAT(text, Not(HasSubstr(R"(ortgpu_model_precision_info{model="m",precision="fp16",version="1"})")));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_precision_info{model="m",precision="fp16",version="2"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_accuracy_min_cosine{model="m",version="2"} 0.875)"));
  // The request counters keep their totals, as for any unloaded version.
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_request_success{model="m",version="1"} 1)"));
}

}  // namespace
}  // namespace ortgpu::serve
