#include "ort/accuracy.h"

#include <gtest/gtest.h>

#include <limits>

namespace ortgpu {
namespace {

Tensor Floats(std::vector<float> values) {
  Tensor t = Tensor::Zeros("y", DataType::kFloat, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

TEST(AccuracyTest, ReportsMaxErrorsAndFailsPastTolerance) {
  Tensor ref = Floats({1.0f, 2.0f, 0.0f});
  Accuracy ok = CompareOutputs({Floats({1.0f, 2.001f, 0.0f})}, {ref}, {});
  EXPECT_TRUE(ok.passed) << ok.note;
  EXPECT_NEAR(ok.max_abs_error, 0.001, 1e-6);
  EXPECT_NEAR(ok.max_rel_error, 0.0005, 1e-6) << "relative to the output's range (2)";
  Accuracy bad = CompareOutputs({Floats({1.0f, 2.0f, 0.5f})}, {ref}, {});
  EXPECT_FALSE(bad.passed);
  EXPECT_NE(bad.note.find("output 'y' element 2"), std::string::npos) << bad.note;
  EXPECT_FALSE(CompareOutputs({Tensor::Zeros("y", DataType::kFloat, {4})}, {ref}, {}).passed);
  EXPECT_FALSE(CompareOutputs({}, {ref}, {}).passed);
}

TEST(AccuracyTest, NearZeroElementsAreJudgedAgainstTheOutputsRange) {
  // TF32 noise: 1e-4 off on an element that is 1e-6, in an output of range 1.
  Accuracy a = CompareOutputs({Floats({1.0f, 1e-4f})}, {Floats({1.0f, 1e-6f})}, {});
  EXPECT_TRUE(a.passed) << a.note;
}

TEST(AccuracyTest, NanMatchesOnlyNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(CompareOutputs({Floats({nan, 1})}, {Floats({nan, 1})}, {}).passed);
  EXPECT_FALSE(CompareOutputs({Floats({0, 1})}, {Floats({nan, 1})}, {}).passed);
}


Tensor Matrix(const std::string& name, int64_t rows, int64_t cols, std::vector<float> values) {
  Tensor t = Tensor::Zeros(name, DataType::kFloat, {rows, cols});
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

TEST(DeviationTest, ReportsErrorsCosinePerRowAndClassifierAgreement) {
  // Two rows of 6 classes. Row 0 agrees up to rounding; row 1's arg-max moves
  // from class 0 to class 1 and one of its top-5 changes.
  Tensor ref = Matrix("logits", 2, 6, {1, 2, 3, 4, 5, 6, 9, 8, 1, 2, 3, 0});
  Tensor got = Matrix("logits", 2, 6, {1, 2, 3, 4, 5, 6.01f, 8, 9, 1, 2, 0, 3});
  DeviationReport r = CompareDeviation({got}, {ref});
  ASSERT_EQ(r.outputs.size(), 1u);
  const OutputDeviation& d = r.outputs[0];
  EXPECT_TRUE(d.compared);
  EXPECT_EQ(d.rows, 2);
  EXPECT_NEAR(d.max_abs_error, 3.0, 1e-6);
  EXPECT_NEAR(d.max_rel_error, 3.0 / 9.0, 1e-6) << "relative to the output's range (9)";
  EXPECT_GT(d.cosine_mean, d.cosine_min);
  EXPECT_NEAR(d.cosine_min, 149.0 / 159.0, 1e-6) << "row 1: dot 149, both squared norms 159";
  EXPECT_TRUE(d.classifier);
  EXPECT_DOUBLE_EQ(d.top1_agreement, 0.5);
  EXPECT_DOUBLE_EQ(d.top5_overlap, (1.0 + 0.8) / 2) << "row 1 lost class 4 and gained class 5 in its top-5";
  EXPECT_EQ(d.new_nan + d.new_inf, 0);
}

TEST(DeviationTest, CountsOnlyTheNanAndInfTheLowerPrecisionIntroduced) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  DeviationReport r = CompareDeviation({Floats({nan, inf, nan, 1})}, {Floats({nan, 2, 3, 1})});
  EXPECT_EQ(r.outputs[0].new_nan, 1) << "the reference's own NaN is not the conversion's";
  EXPECT_EQ(r.outputs[0].new_inf, 1);
  EXPECT_FALSE(r.outputs[0].classifier) << "a 1-D output is not [batch, classes]";
  auto v = BudgetViolations(r, {});
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v[0].find("1 NaN and 1 Inf"), std::string::npos) << v[0];
}

TEST(DeviationTest, ZeroRowsAgreeAndAMissingOutputBreaksTheBudget) {
  DeviationReport same = CompareDeviation({Floats({0, 0})}, {Floats({0, 0})});
  EXPECT_EQ(same.outputs[0].cosine_min, 1.0);
  EXPECT_TRUE(BudgetViolations(same, {}).empty());
  DeviationReport missing = CompareDeviation({}, {Floats({1})});
  auto v = BudgetViolations(missing, {});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("missing"), std::string::npos);
}

TEST(PrecisionBudgetTest, DefaultsAreTheDocumentedOnesAndEachBoundIsChecked) {
  PrecisionBudget b;
  EXPECT_EQ(b.min_cosine, 0.999);
  EXPECT_FALSE(b.allow_nonfinite);
  EXPECT_EQ(b.min_top1, 0.99);
  EXPECT_EQ(b.max_rel_error, 0.05);
  OutputDeviation d;
  d.name = "y";
  d.compared = true;
  d.cosine_min = 0.99;
  d.classifier = true;
  d.top1_agreement = 0.9;
  d.max_rel_error = 0.2;
  auto v = BudgetViolations({{d}}, b);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NE(v[0].find("row cosine 0.990000 < 0.999"), std::string::npos) << v[0];
  EXPECT_NE(v[1].find("top-1 agreement 90.0% < 99%"), std::string::npos) << v[1];
  EXPECT_NE(v[2].find("max relative error 0.2 > 0.05"), std::string::npos) << v[2];
}

TEST(PrecisionBudgetTest, ParsesAnySubsetAndNamesABadKey) {
  auto b = ParsePrecisionBudget("cosine=0.99,top1=0.95,rel=0,nonfinite=allow");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->min_cosine, 0.99);
  EXPECT_EQ(b->min_top1, 0.95);
  EXPECT_EQ(b->max_rel_error, 0);
  EXPECT_TRUE(b->allow_nonfinite);
  EXPECT_EQ(ParsePrecisionBudget("")->min_cosine, 0.999);
  auto bad = ParsePrecisionBudget("cosin=0.9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown key 'cosin'"), std::string::npos);
  EXPECT_FALSE(ParsePrecisionBudget("cosine=2").ok());
  EXPECT_FALSE(ParsePrecisionBudget("cosine=x").ok());
  EXPECT_NE(DescribeBudget({}).find("cosine >= 0.999"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu
