#include "bench/precisions.h"

#include <gtest/gtest.h>

namespace ortgpu::bench {
namespace {

TEST(PrecisionsTest, NamesParseAndTheCpuHasNoTf32) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kMixed}) {
    EXPECT_EQ(*ParsePrecision(PrecisionName(p)), p);
  }
  auto bad = ParsePrecision("bf16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'bf16'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("fp32 (TF32 off)"), std::string::npos);
  EXPECT_EQ(DefaultPrecision(Provider::kCpu), Precision::kFp32);
  EXPECT_EQ(DefaultPrecision(Provider::kCuda), Precision::kTf32);
  EXPECT_EQ(EffectivePrecision(Provider::kCpu, Precision::kTf32), Precision::kFp32);
  EXPECT_EQ(EffectivePrecision(Provider::kCuda, Precision::kTf32), Precision::kTf32);
  EXPECT_EQ(EffectivePrecision(Provider::kCpu, Precision::kFp16), Precision::kFp16);
}

TEST(PrecisionsTest, Issue26SummaryTakesTheWorstOutputAndTheBudgetVerdict) {
  DeviationReport d;
  OutputDeviation logits;
  logits.name = "logits";
  logits.compared = true;
  logits.cosine_min = 0.99991;
  logits.max_rel_error = 0.004;
  logits.classifier = true;
  logits.top1_agreement = 0.75;
  OutputDeviation boxes = logits;
  boxes.name = "boxes";
  boxes.classifier = false;
  boxes.cosine_min = 0.9999;
  boxes.max_rel_error = 0.01;
  d.outputs = {logits, boxes};
  const PrecisionAccuracy a = SummariseDeviation(d, PrecisionBudget{});
  EXPECT_TRUE(a.checked);
  EXPECT_DOUBLE_EQ(a.min_cosine, 0.9999);
  EXPECT_DOUBLE_EQ(a.max_rel_error, 0.01);
  ASSERT_TRUE(a.top1_agreement);
  EXPECT_DOUBLE_EQ(*a.top1_agreement, 0.75);
  EXPECT_FALSE(a.within_budget) << "top-1 75% < 99%";
  ASSERT_EQ(a.violations.size(), 1u);
  EXPECT_NE(a.violations[0].find("top-1 agreement 75.0%"), std::string::npos) << a.violations[0];
  EXPECT_EQ(BudgetCell(a), "NO");
  EXPECT_EQ(Top1Cell(a), "75%");
  EXPECT_EQ(CosineCell(a), "0.999900");
  EXPECT_EQ(DescribeAccuracy(a), "min cosine 0.9999, max rel error 0.01, top-1 75%");
  EXPECT_FALSE(Recommendable(Precision::kFp16, a));
}

TEST(PrecisionsTest, Issue26Fp32IsTheReferenceAndAnUnjudgedConversionIsNotRecommendable) {
  const PrecisionAccuracy ref = ReferenceAccuracy();
  EXPECT_EQ(BudgetCell(ref), "ref");
  EXPECT_EQ(CosineCell(ref), "1.000000");
  EXPECT_TRUE(Recommendable(Precision::kFp32, ref));
  PrecisionAccuracy unjudged;
  EXPECT_EQ(BudgetCell(unjudged), "-");
  EXPECT_EQ(CosineCell(unjudged), "-");
  EXPECT_TRUE(Recommendable(Precision::kTf32, unjudged)) << "today's default stays recommendable";
  EXPECT_FALSE(Recommendable(Precision::kFp16, unjudged));
  EXPECT_FALSE(Recommendable(Precision::kMixed, unjudged));
}

}  // namespace
}  // namespace ortgpu::bench
