// The precision census of models built here: float32, converted to float16
// by ortgpu's own converter, mixed (nodes kept float32), and hand-made ones
// with Cast pairs that cancel.
#include "doctor/precision_census.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_file_system.h"
#include "onnx.pb.h"
#include "onnx/graph_derivation.h"
#include "onnx/model_builder.h"
#include "doctor/precision_models.h"
#include "support/vit_attention_scale.h"

namespace ortgpu::doctor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::ortgpu::testing::FakeFileSystem;
using ::ortgpu::testing::Fp16Chain;
using ::ortgpu::testing::Fp32Chain;

::onnx::ModelProto Parse(const std::string& bytes) {
  ::onnx::ModelProto m;
  m.ParseFromString(bytes);
  return m;
}

TEST(PrecisionCensusTest, Float32ModelHasNoIslandsAndNoCasts) {
  const PrecisionCensus c = CensusPrecision(Fp32Chain());
  EXPECT_EQ(c.precision, ModelPrecision::kFloat32);
  EXPECT_EQ(c.nodes, 5);
  EXPECT_EQ(c.fp32_nodes, 5);
  EXPECT_EQ(c.fp16_nodes, 0);
  EXPECT_EQ(c.casts, 0);
  EXPECT_TRUE(c.fp32_islands.empty());
  EXPECT_EQ(c.weights.fp32_elements, 72);
  EXPECT_EQ(ModelPrecisionName(c.precision), "fp32");
}

TEST(PrecisionCensusTest, ConvertedModelComputesInFloat16BetweenItsBoundaryCasts) {
  const PrecisionCensus c = CensusPrecision(Fp16Chain());
  EXPECT_EQ(c.precision, ModelPrecision::kFloat16);
  EXPECT_EQ(c.fp16_nodes, 5);
  EXPECT_EQ(c.fp32_nodes, 0);
  EXPECT_EQ(c.casts, 2);  // after x, before y
  EXPECT_TRUE(c.cancelling_casts.empty());
  EXPECT_TRUE(c.useless_casts.empty());
  EXPECT_TRUE(c.fp32_islands.empty());
  EXPECT_EQ(c.weights.fp16_elements, 72);
}

TEST(PrecisionCensusTest, NodesKeptInFloat32FormIslandsBiggestFirst) {
  const PrecisionCensus c =
      CensusPrecision(Fp16Chain({{"Add_1", "kept"}, {"Relu_2", "kept"}, {"Tanh_4", "kept"}}));
  EXPECT_EQ(c.precision, ModelPrecision::kMixed);
  EXPECT_EQ(c.fp16_nodes, 2);  // MatMul_0, Sigmoid_3
  EXPECT_EQ(c.fp32_nodes, 3);
  ASSERT_EQ(c.fp32_islands.size(), 2u);
  EXPECT_THAT(c.fp32_islands[0].nodes, ElementsAre("Add_1", "Relu_2"));
  EXPECT_EQ(c.fp32_islands[0].ops.at("Add"), 1);
  EXPECT_EQ(c.fp32_islands[0].border_casts, 2);  // float16 in, float16 out
  EXPECT_THAT(c.fp32_islands[1].nodes, ElementsAre("Tanh_4"));
  EXPECT_EQ(c.fp32_islands[1].border_casts, 1);  // y stays float32: no Cast after it
  EXPECT_TRUE(c.cancelling_casts.empty());
}

// x float16 -> Cast_0(float) -> Cast_1(float16) -> Relu_2 -> Cast_3(float16) -> y;
// and z float32 -> Cast_4(float16) -> Cast_5(float) -> Neg_6 -> w: a rounding, not a waste.
::onnx::ModelProto CastsThatCancel() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat16, {2, 4}, {});
  b.AddInput("z", DataType::kFloat, {2, 4}, {});
  b.AddOutput("y", DataType::kFloat16, {2, 4}, {});
  b.AddOutput("w", DataType::kFloat, {2, 4}, {});
  b.AddNode("Cast", {"x"}, {"x32"}, {{"to", 1}});
  b.AddNode("Cast", {"x32"}, {"x16"}, {{"to", 10}});
  b.AddNode("Relu", {"x16"}, {"r"});
  b.AddNode("Cast", {"r"}, {"y"}, {{"to", 10}});
  b.AddNode("Cast", {"z"}, {"z16"}, {{"to", 10}});
  b.AddNode("Cast", {"z16"}, {"z32"}, {{"to", 1}});
  b.AddNode("Neg", {"z32"}, {"w"});
  return Parse(b.Serialize());
}

TEST(PrecisionCensusTest, LosslessRoundTripsAndCastsToTheirOwnTypeAreWasted) {
  const PrecisionCensus c = CensusPrecision(CastsThatCancel());
  EXPECT_EQ(c.casts, 5);
  ASSERT_EQ(c.cancelling_casts.size(), 1u);
  EXPECT_EQ(c.cancelling_casts[0].first, "Cast_0");
  EXPECT_EQ(c.cancelling_casts[0].second, "Cast_1");
  EXPECT_EQ(c.cancelling_casts[0].types, "float16 -> float32 -> float16");
  EXPECT_THAT(c.useless_casts, ElementsAre("Cast_3 (float16 to float16)"));
  EXPECT_EQ(c.precision, ModelPrecision::kMixed);  // Relu in float16, Neg in float32
}

TEST(PrecisionCensusTest, ShapeArithmeticIsCountedApartWithTheDerivation) {
  const std::string bytes = ortgpu::testing::VitAttentionScaleModel();
  const PrecisionCensus by_types = CensusPrecision(Parse(bytes));
  EXPECT_EQ(by_types.fp32_nodes, 5);  // MatMul, Sqrt, Div, Mul, Sqrt
  EXPECT_EQ(by_types.shape_nodes, 0);
  auto derivation = onnx::DeriveGraph(bytes);
  ASSERT_TRUE(derivation.ok());
  const PrecisionCensus c = CensusPrecision(Parse(bytes), &*derivation);
  EXPECT_EQ(c.fp32_nodes, 3);   // MatMul_0, Mul_6, Sqrt_7
  EXPECT_EQ(c.shape_nodes, 4);  // Shape_1, Gather_2, Sqrt_4, Div_5
  EXPECT_EQ(c.casts, 1);
}

TEST(PrecisionCensusTest, ReadsTheModelThroughTheFileSystem) {
  FakeFileSystem fs;
  fs.AddFile("/models/mixed.onnx", Fp16Chain({{"Add_1", "kept"}}).SerializeAsString());
  fs.AddFile("/models/garbage.onnx", std::string("\xff\xff\xff\xff not a model", 18));
  auto c = ReadPrecisionCensus(fs, "/models/mixed.onnx");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->precision, ModelPrecision::kMixed);
  EXPECT_EQ(c->fp32_islands.size(), 1u);
  auto bad = ReadPrecisionCensus(fs, "/models/garbage.onnx");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("/models/garbage.onnx"));
  EXPECT_FALSE(ReadPrecisionCensus(fs, "/models/missing.onnx").ok());
}

}  // namespace
}  // namespace ortgpu::doctor
