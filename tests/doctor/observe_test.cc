#include "doctor/observe.h"

#include <gtest/gtest.h>

#include <fstream>

#include "onnx/model_builder.h"

namespace ortgpu::doctor {
namespace {

ObserveOptions Quick() {
  ObserveOptions o;
  o.warmup_runs = 1;
  o.timed_runs = 3;
  o.builtin_batch = 2;
  o.temp_dir = testing::TempDir();
  return o;
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(ObserveTest, CpuPathRunsEndToEndWithoutAGpu) {
  auto r = ObserveRuntime(/*gpu_expected=*/false, Quick());
  EXPECT_EQ(r.provider.ort_version, "1.29.0");
  EXPECT_FALSE(r.provider.attempted);
  ASSERT_FALSE(r.provider.ep_devices.empty());
  EXPECT_NE(r.provider.ep_devices[0].find("CPUExecutionProvider on CPU"), std::string::npos);
  EXPECT_TRUE(r.end_to_end.cpu.ok) << r.end_to_end.cpu.error;
  EXPECT_GT(r.end_to_end.cpu.median_ms, 0);
  EXPECT_FALSE(r.end_to_end.cuda.has_value());
  EXPECT_FALSE(r.end_to_end.skip_reason.empty());
  Report report;
  EvaluateProvider(r.provider, report);
  EvaluateEndToEnd(r.end_to_end, report);
  EXPECT_EQ(report.Find("e2e.cpu")->verdict, Verdict::kPass);
  EXPECT_EQ(report.Find("e2e.cuda")->verdict, Verdict::kSkip);
}

TEST(ObserveTest, UserModelWithSymbolicDimsGetsTheStatedDefault) {
  const std::string path = WriteFile("doctor_model.onnx", onnx::BuiltinCheckModel());
  auto m = ObserveModel(path, /*cuda=*/false, Quick());
  EXPECT_TRUE(m.load_error.empty()) << m.load_error;
  ASSERT_EQ(m.defaulted_dims.size(), 1u);
  EXPECT_EQ(m.defaulted_dims[0], "image[0]=batch");
  EXPECT_TRUE(m.run.cpu.ok);
}

TEST(ObserveTest, ShapeFlagSetsTheInputShape) {
  const std::string path = WriteFile("doctor_model2.onnx", onnx::BuiltinCheckModel());
  auto o = Quick();
  o.shapes["image"] = {4, 3, 64, 64};
  auto m = ObserveModel(path, false, o);
  ASSERT_TRUE(m.load_error.empty()) << m.load_error;
  ASSERT_EQ(m.input_shapes.size(), 1u);
  EXPECT_EQ(m.input_shapes[0], "image: float32 4x3x64x64 (from --shape)");
}

TEST(ObserveTest, ShapeThatDoesNotFitIsAClearError) {
  const std::string path = WriteFile("doctor_model3.onnx", onnx::BuiltinCheckModel());
  auto o = Quick();
  o.shapes["image"] = {4, 3, 32, 64};
  auto m = ObserveModel(path, false, o);
  EXPECT_NE(m.load_error.find("dimension 2 is fixed at 64"), std::string::npos) << m.load_error;
  o.shapes = {{"pixels", {1, 3, 64, 64}}};
  m = ObserveModel(path, false, o);
  EXPECT_TRUE(m.load_error.empty()) << "a --shape for another model's input is not this model's error";
}

TEST(ObserveTest, CorruptAndMissingModelsAreFindingsNotCrashes) {
  const std::string path = WriteFile("corrupt.onnx", "\x08\x07garbage that is not protobuf");
  auto m = ObserveModel(path, false, Quick());
  EXPECT_FALSE(m.load_error.empty());
  auto missing = ObserveModel("/nonexistent/x.onnx", false, Quick());
  EXPECT_NE(missing.load_error.find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::doctor
