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

}  // namespace
}  // namespace ortgpu
