// Converted models in ONNX Runtime on the CPU provider: they load, they run
// (ORT adds its own Casts where the CPU has no float16 kernel) and their
// outputs stay within the default budget of true float32. Also external-data
// models, read and written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "ort/accuracy.h"
#include "ort/random_inputs.h"
#include "ort/session.h"
#include "precision/convert.h"
#include "precision/evaluate.h"
#include "precision/model_file.h"
#include "precision/precision_test_models.h"
#include "support/temp_dir.h"

namespace ortgpu::precision {
namespace {

using namespace test_models;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
namespace fs = std::filesystem;

using testing_support::TempDir;

std::vector<Tensor> InputsFor(const ::onnx::ModelProto& m, int64_t batch) {
  auto session = Session::LoadFromBytes(m.SerializeAsString(), {}, "inputs");
  EXPECT_TRUE(session.ok()) << session.status().message();
  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (const auto& info : (*session)->inputs()) {
    std::vector<int64_t> shape = info.shape;
    for (auto& d : shape) d = d < 0 ? batch : d;
    Tensor t = Tensor::Zeros(info.name, info.dtype, shape);
    FillRandom(t, seed++, DefaultIntRange(info.name, info.dtype));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

DeviationReport RunBoth(const ::onnx::ModelProto& fp32, const ::onnx::ModelProto& fp16,
                        const std::vector<Tensor>& inputs) {
  OrtModelRunner runner(Float32Reference({}));
  auto ref = runner.Run(fp32, inputs);
  auto out = runner.Run(fp16, inputs);
  EXPECT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!ref.ok() || !out.ok()) return {};
  return CompareDeviation(*out, *ref);
}

// External data for every tensor of 8 bytes or more, whatever the model's size.
WriteOptions AlwaysExternal() {
  WriteOptions o;
  o.inline_limit = 0;
  o.min_external_bytes = 8;
  return o;
}

TEST(ConvertedModelInOrt, MatMulAddModelLoadsRunsAndStaysWithinBudget) {
  auto fp32 = MatMulAddRelu();
  auto fp16 = fp32;
  ASSERT_TRUE(ConvertToFloat16(fp16, {}).ok());
  auto inputs = InputsFor(fp32, 8);
  auto d = RunBoth(fp32, fp16, inputs);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_TRUE(d.outputs[0].compared) << d.outputs[0].note;
  EXPECT_THAT(BudgetViolations(d, {}), IsEmpty());
  EXPECT_GT(d.outputs[0].cosine_min, 0.999);
}

TEST(ConvertedModelInOrt, DoctorsConvolutionModelStaysWithinBudget) {
  ::onnx::ModelProto fp32;
  fp32.ParseFromString(onnx::BuiltinCheckModel());
  auto fp16 = fp32;
  ASSERT_TRUE(ConvertToFloat16(fp16, {}).ok());
  auto d = RunBoth(fp32, fp16, InputsFor(fp32, 4));
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_TRUE(d.outputs[0].classifier) << "logits [batch, 10]";
  EXPECT_THAT(BudgetViolations(d, {}), IsEmpty());
}

TEST(ConvertedModelInOrt, Issue26LayerNormModelLoadsAfterConversion) {
  onnx::ModelBuilder b(17);
  b.AddInput("x", DataType::kFloat, {-1, 16}, {"batch"});
  b.AddOutput("y", DataType::kFloat, {-1, 16}, {"batch"});
  b.AddFloatInitializer("gamma", {16}, 1.0f, 3);
  b.AddFloatInitializer("beta", {16}, 0.1f, 4);
  b.AddFloatInitializer("w", {16, 16}, 0.3f, 5);
  b.AddNode("MatMul", {"x", "w"}, {"h"});
  b.AddNode("LayerNormalization", {"h", "gamma", "beta"}, {"y"}, {{"axis", -1}});
  auto fp32 = Parse(b.Serialize());
  auto fp16 = fp32;
  ASSERT_TRUE(ConvertToFloat16(fp16, {}).ok());
  auto d = RunBoth(fp32, fp16, InputsFor(fp32, 4));
  EXPECT_THAT(BudgetViolations(d, {}), IsEmpty());
}

TEST(ConvertedModelInOrt, RealPlacementObserverReadsTheProfileOfTheTargetProvider) {
  // On the CPU provider everything, ORT's own Casts included, is on target.
  auto fp16 = MatMulAddRelu();
  ASSERT_TRUE(ConvertToFloat16(fp16, {}).ok());
  OrtPlacementObserver observer({});
  auto off = observer.OffTargetNodes(fp16, InputsFor(fp16, 2));
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_THAT(*off, IsEmpty());
}

TEST(ModelFile, ExternalDataModelIsReadConvertedAndWrittenBack) {
  TempDir dir;
  auto fp32 = MatMulAddRelu();
  const WriteOptions external = AlwaysExternal();
  auto written = WriteModelFile(fp32, dir.Path("model.onnx"), external);
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_TRUE(*written);
  EXPECT_TRUE(fs::exists(dir.Path("model.onnx.data")));
  auto read = ReadModelFile(dir.Path("model.onnx"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(Initializer(*read, "w")->data_location(), ::onnx::TensorProto::DEFAULT);
  auto converted = *read;
  ASSERT_TRUE(ConvertToFloat16(converted, {}).ok());
  auto out = WriteModelFile(converted, dir.Path("out.onnx"), external);
  ASSERT_TRUE(out.ok()) << out.status().message();
  // ORT reads the converted model and its data file from the folder.
  auto session = Session::Load(dir.Path("out.onnx"), {});
  ASSERT_TRUE(session.ok()) << session.status().message();
  auto inputs = InputsFor(*read, 2);
  auto ref = OrtModelRunner({}).Run(*read, inputs);
  auto got = (*session)->Run(inputs);
  ASSERT_TRUE(ref.ok() && got.ok());
  EXPECT_THAT(BudgetViolations(CompareDeviation(*got, *ref), {}), IsEmpty());
}

TEST(ModelFile, ExternalDataOutsideTheModelsFolderIsRefused) {
  TempDir dir;
  auto m = MatMulAddRelu();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("../../etc/passwd");
  dir.File("m.onnx", m.SerializeAsString());
  auto read = ReadModelFile(dir.Path("m.onnx"));
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("not a file inside the model's folder"));
}

TEST(ModelFile, MissingDataFileNamesItAndSaysWhatToDo) {
  TempDir dir;
  auto m = MatMulAddRelu();
  const WriteOptions external = AlwaysExternal();
  ASSERT_TRUE(WriteModelFile(m, dir.Path("m.onnx"), external).ok());
  fs::remove(dir.Path("m.onnx.data"));
  auto read = ReadModelFile(dir.Path("m.onnx"));
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("m.onnx.data"));
  EXPECT_THAT(read.status().message(), HasSubstr("copy the data file"));
}

}  // namespace
}  // namespace ortgpu::precision
