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

TEST(ObserveTest, Issue9ShapeThatDoesNotFitIsAnErrorOfTheFlagNotOfTheModel) {
  const std::string path = WriteFile("doctor_model3.onnx", onnx::BuiltinCheckModel());
  auto o = Quick();
  o.shapes["image"] = {4, 3, 32, 64};
  auto m = ObserveModel(path, false, o);
  EXPECT_TRUE(m.load_error.empty()) << m.load_error;
  EXPECT_NE(m.input_error.find("--shape image:4x3x32x64 gives input 'image' shape 4x3x32x64"), std::string::npos)
      << m.input_error;
  EXPECT_NE(m.input_error.find("dimension 2 is fixed at 64"), std::string::npos) << m.input_error;
  Report report;
  EvaluateModel(m, 1, report);
  ASSERT_NE(report.Find("model.1.inputs"), nullptr);
  EXPECT_EQ(report.Find("model.1.inputs")->verdict, Verdict::kFail);
  EXPECT_EQ(report.Find("model.1.load"), nullptr) << "not 'cannot load ... re-export the model'";
  EXPECT_NE(report.Find("model.1.inputs")->fix.find("--shape NAME:DIMS"), std::string::npos);
  o.shapes = {{"pixels", {1, 3, 64, 64}}};
  m = ObserveModel(path, false, o);
  EXPECT_TRUE(m.load_error.empty() && m.input_error.empty()) << "a --shape for another model's input is not this model's error";
}

TEST(ObserveTest, Issue9ShapeTakesASymbolicDimNameAsBenchDoes) {
  const std::string path = WriteFile("doctor_model4.onnx", onnx::BuiltinCheckModel());
  auto o = Quick();
  o.shapes["batch"] = {3};
  auto m = ObserveModel(path, false, o);
  ASSERT_TRUE(m.input_error.empty()) << m.input_error;
  ASSERT_EQ(m.input_shapes.size(), 1u);
  EXPECT_EQ(m.input_shapes[0], "image: float32 3x3x64x64 (from --shape)");
  EXPECT_TRUE(m.defaulted_dims.empty());
  o.shapes["batch"] = {3, 4};
  m = ObserveModel(path, false, o);
  EXPECT_NE(m.input_error.find("'batch' is a symbolic dimension, so it takes one size"), std::string::npos)
      << m.input_error;
}

TEST(ObserveTest, Issue9IntRangeAndInputSetTheValuesDoctorRuns) {
  // y = Cast(n) + x: the value of the int64 input shows in the output.
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {1});
  b.AddInput("n", DataType::kInt64, {1});
  b.AddOutput("y", DataType::kFloat, {1});
  b.AddNode("Cast", {"n"}, {"nf"}, {{"to", 1}});
  b.AddNode("Add", {"nf", "x"}, {"y"});
  const std::string path = WriteFile("doctor_int_model.onnx", b.Serialize());
  auto o = Quick();
  o.int_ranges["n"] = {16000, 16001};
  Tensor x = Tensor::Zeros("x", DataType::kFloat, {1});
  x.data_as<float>()[0] = 0.5f;
  o.inputs["x"] = x;
  auto session = Session::Load(path, SessionOptions{});
  ASSERT_TRUE(session.ok());
  std::vector<std::string> described;
  auto inputs = MakeInputs(**session, o, &described, nullptr);
  ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
  EXPECT_EQ((*inputs)[0].data_as<float>()[0], 0.5f);
  EXPECT_EQ((*inputs)[1].data_as<int64_t>()[0], 16000);
  EXPECT_EQ(described[0], "x: float32 1 (from --input)");
  o.inputs["x"] = Tensor::Zeros("x", DataType::kInt32, {1});
  EXPECT_NE(MakeInputs(**session, o, nullptr, nullptr).status().message().find("--input x holds int32"),
            std::string::npos);
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
