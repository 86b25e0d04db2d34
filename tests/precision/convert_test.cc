#include "precision/convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "precision/precision_test_models.h"
#include "precision/tensor_values.h"

namespace ortgpu::precision {
namespace {

using namespace test_models;
using ::testing::Contains;
using ::testing::IsEmpty;
using ::testing::HasSubstr;
constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kF16 = ::onnx::TensorProto::FLOAT16;

ConversionReport Convert(::onnx::ModelProto& m, const ConvertOptions& o = {}) {
  auto r = ConvertToFloat16(m, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ConversionReport{};
}

TEST(ConvertToFloat16, WeightsAndValuesBecomeFloat16AndInputsOutputsKeepTheirType) {
  auto m = MatMulAddRelu();
  auto r = Convert(m);
  EXPECT_EQ(Initializer(m, "w")->data_type(), kF16);
  EXPECT_EQ(Initializer(m, "b")->data_type(), kF16);
  EXPECT_EQ(r.initializers_converted, 2);
  EXPECT_EQ(DeclaredType(m, "x"), kF32) << "keep_io_types is on by default";
  EXPECT_EQ(DeclaredType(m, "y"), kF32);
  EXPECT_EQ(DeclaredType(m, "h"), kF16) << "value_info follows the conversion";
  EXPECT_EQ(TypeOf(m, "hb"), kF16);
  EXPECT_EQ(r.casts_added, 2) << "one Cast after the input, one before the output";
  EXPECT_EQ(CountOp(m, "Cast"), 2);
  EXPECT_EQ(r.converted.size(), 3u);
  EXPECT_TRUE(r.kept_fp32.empty());
  EXPECT_THAT(UselessCasts(m), IsEmpty());
  // The output keeps its name: the last node casts the renamed fp16 value.
  EXPECT_EQ(m.graph().node(m.graph().node_size() - 1).output(0), "y");
}

TEST(ConvertToFloat16, KeepIoTypesOffMakesInputsAndOutputsFloat16WithoutCasts) {
  auto m = MatMulAddRelu();
  ConvertOptions o;
  o.keep_io_types = false;
  auto r = Convert(m, o);
  EXPECT_EQ(DeclaredType(m, "x"), kF16);
  EXPECT_EQ(DeclaredType(m, "y"), kF16);
  EXPECT_EQ(CountOp(m, "Cast"), 0);
  EXPECT_EQ(r.casts_added, 0);
}

TEST(ConvertToFloat16, ValuesOutsideFloat16sRangeAreClippedNotMadeInfinite) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {4});
  b.AddOutput("y", DataType::kFloat, {4});
  b.AddFloatValues("c", {4}, {1e6f, -1e6f, 1e-9f, 0.0f});
  b.AddNode("Mul", {"x", "c"}, {"y"});
  auto m = Parse(b.Serialize());
  auto r = Convert(m);
  EXPECT_EQ(r.values_clipped, 3);
  auto v = Float16Values(*Initializer(m, "c"));
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0], 65504.0f);
  EXPECT_EQ(v[1], -65504.0f);
  EXPECT_GT(v[2], 0.0f) << "a tiny value keeps its sign instead of flushing to 0";
  EXPECT_EQ(v[3], 0.0f);
  EXPECT_EQ(ClipToFloat16Range(INFINITY, 5.96e-8f, 65504.0f), INFINITY) << "Inf stays Inf";
}

TEST(ConvertToFloat16, BlockedOpStaysFloat32WithCastsOnEachSide) {
  // x -> Mul(w) -> Max(., c) -> Relu -> y; Max is in the default block list.
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {2, 3});
  b.AddOutput("y", DataType::kFloat, {2, 3});
  b.AddFloatInitializer("w", {3}, 1.0f, 1);
  b.AddFloatInitializer("c", {3}, 1.0f, 2);
  b.AddNode("Mul", {"x", "w"}, {"m"});
  b.AddNode("Max", {"m", "c"}, {"mx"});
  b.AddNode("Relu", {"mx"}, {"y"});
  auto m = Parse(b.Serialize());
  auto r = Convert(m);
  ASSERT_EQ(r.kept_fp32.size(), 1u);
  EXPECT_EQ(r.kept_fp32[0].op_type, "Max");
  EXPECT_THAT(r.kept_fp32[0].reason, HasSubstr("op block list"));
  const auto* max = NodeNamed(m, "Max_1");
  ASSERT_NE(max, nullptr);
  EXPECT_EQ(TypeOf(m, max->input(0)), kF32) << "a Cast to fp32 before the blocked node";
  EXPECT_EQ(Initializer(m, "c")->data_type(), kF32) << "a weight only the blocked node reads stays fp32";
  EXPECT_EQ(TypeOf(m, "mx"), kF32);
  EXPECT_EQ(TypeOf(m, NodeNamed(m, "Relu_2")->input(0)), kF16) << "a Cast back to fp16 after it";
  EXPECT_THAT(UselessCasts(m), IsEmpty());
}

TEST(ConvertToFloat16, NodeBlockListKeepsNamedNodesWithTheReasonGiven) {
  auto m = MatMulAddRelu();
  ConvertOptions o;
  o.node_block_list["Add_1"] = "kept for a test";
  auto r = Convert(m, o);
  ASSERT_EQ(r.kept_fp32.size(), 1u);
  EXPECT_EQ(r.kept_fp32[0].name, "Add_1");
  EXPECT_EQ(r.kept_fp32[0].reason, "kept for a test");
  EXPECT_EQ(Initializer(m, "b")->data_type(), kF32);
  EXPECT_THAT(UselessCasts(m), IsEmpty());
}

TEST(ConvertToFloat16, ResizeScalesAndRoiStayFloat32WhenResizeIsConverted) {
  onnx::ModelBuilder b(13);
  b.AddInput("x", DataType::kFloat, {1, 1, 2, 2});
  b.AddOutput("y", DataType::kFloat, {1, 1, 4, 4});
  b.AddFloatValues("roi", {0}, {});
  b.AddFloatValues("scales", {4}, {1, 1, 2, 2});
  b.AddNode("Resize", {"x", "roi", "scales"}, {"y"});
  auto m = Parse(b.Serialize());
  ConvertOptions o;
  o.op_block_list.clear();
  auto r = Convert(m, o);
  EXPECT_EQ(r.converted.size(), 1u);
  EXPECT_EQ(Initializer(m, "scales")->data_type(), kF32);
  EXPECT_EQ(Initializer(m, "roi")->data_type(), kF32);
  EXPECT_EQ(TypeOf(m, NodeNamed(m, "Resize_0")->input(0)), kF16);
}

TEST(ConvertToFloat16, Issue26LayerNormScaleAndBiasFollowTheInputType) {
  // torch's model.half() export of BERT fails to load in ORT with
  // "LayerNormalization bound to float and float16": X fp16, scale fp32.
  onnx::ModelBuilder b(17);
  b.AddInput("x", DataType::kFloat, {2, 8});
  b.AddOutput("y", DataType::kFloat, {2, 8});
  b.AddFloatInitializer("gamma", {8}, 1.0f, 3);
  b.AddFloatInitializer("beta", {8}, 0.1f, 4);
  b.AddNode("LayerNormalization", {"x", "gamma", "beta"}, {"y"}, {{"axis", -1}});
  auto m = Parse(b.Serialize());
  Convert(m);
  const auto* ln = NodeNamed(m, "LayerNormalization_0");
  ASSERT_NE(ln, nullptr);
  EXPECT_EQ(TypeOf(m, ln->input(0)), kF16);
  EXPECT_EQ(TypeOf(m, ln->input(1)), kF16);
  EXPECT_EQ(TypeOf(m, ln->input(2)), kF16);
}

TEST(ConvertToFloat16, AWeightReadInBothPrecisionsGetsAFloat16Copy) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {3});
  b.AddOutput("y", DataType::kFloat, {3});
  b.AddFloatInitializer("w", {3}, 1.0f, 5);
  b.AddNode("Mul", {"x", "w"}, {"m"});
  b.AddNode("Max", {"m", "w"}, {"y"});
  auto m = Parse(b.Serialize());
  auto r = Convert(m);
  EXPECT_EQ(r.initializers_duplicated, 1);
  EXPECT_EQ(Initializer(m, "w")->data_type(), kF32);
  ASSERT_NE(Initializer(m, "w_fp16"), nullptr);
  EXPECT_EQ(Initializer(m, "w_fp16")->data_type(), kF16);
  EXPECT_EQ(NodeNamed(m, "Mul_0")->input(1), "w_fp16");
  EXPECT_EQ(NodeNamed(m, "Max_1")->input(1), "w");
}

TEST(ConvertToFloat16, CastToFloatBecomesCastToFloat16AndConstantsConvert) {
  // An int64 mask cast to float, scaled by a Constant: BERT's attention mask.
  onnx::ModelBuilder b;
  b.AddInput("mask", DataType::kInt64, {2, 4});
  b.AddOutput("y", DataType::kFloat, {2, 4});
  b.AddNode("Cast", {"mask"}, {"mf"}, {{"to", 1}});
  b.AddFloatConstant("big", {}, {-3.4e38f});
  b.AddNode("Mul", {"mf", "big"}, {"y"});
  auto m = Parse(b.Serialize());
  auto r = Convert(m);
  EXPECT_EQ(r.casts_retargeted, 1);
  EXPECT_EQ(r.constants_converted, 1);
  EXPECT_EQ(r.values_clipped, 1) << "torch's finfo(float32).min clipped to -65504";
  EXPECT_EQ(TypeOf(m, "mf"), kF16);
  EXPECT_EQ(TypeOf(m, "big"), kF16);
  EXPECT_EQ(DeclaredType(m, "y"), kF32);
  EXPECT_THAT(UselessCasts(m), IsEmpty());
}

TEST(ConvertToFloat16, NoUselessOrCancellingCastIsLeft) {
  // A float32 model with its own Cast(to=float) (a no-op) and a blocked
  // node whose fp32 output feeds an fp16 node: nothing converts back and forth.
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {3});
  b.AddOutput("y", DataType::kFloat, {3});
  b.AddOutput("z", DataType::kFloat, {3});
  b.AddFloatInitializer("w", {3}, 1.0f, 6);
  b.AddNode("Cast", {"x"}, {"xc"}, {{"to", 1}});
  b.AddNode("Relu", {"xc"}, {"r"});
  b.AddNode("CumSum", {"r", "axis"}, {"cs"});
  b.AddInt64Initializer("axis", {}, {0});
  b.AddNode("Mul", {"cs", "w"}, {"y"});
  b.AddNode("Identity", {"cs"}, {"z"});
  auto m = Parse(b.Serialize());
  Convert(m);
  EXPECT_THAT(UselessCasts(m), IsEmpty());
  const auto* own = NodeNamed(m, "Cast_0");
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->input(0), "x") << "the model's own Cast is the boundary Cast, no second one on x";
  EXPECT_EQ(own->attribute(0).i(), kF16);
  EXPECT_EQ(DeclaredType(m, "z"), kF32);
  EXPECT_EQ(DeclaredType(m, "y"), kF32);
}

TEST(ConvertToFloat16, ACastMadeUselessByTheConversionIsRemoved) {
  // x -> Relu -> Cast(to=float16) -> y (an fp16 output): once Relu runs in
  // fp16 the Cast changes nothing; it stays only as the output's Identity.
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {3});
  b.AddOutput("y", DataType::kFloat16, {3});
  b.AddOutput("z", DataType::kFloat, {3});
  b.AddNode("Relu", {"x"}, {"r"});
  b.AddNode("Cast", {"r"}, {"r16"}, {{"to", kF16}});
  b.AddNode("Neg", {"r16"}, {"y"});
  b.AddNode("Cast", {"r16"}, {"z"}, {{"to", kF32}});
  auto m = Parse(b.Serialize());
  auto r = Convert(m);
  EXPECT_GE(r.casts_removed, 1);
  EXPECT_THAT(UselessCasts(m), IsEmpty());
  EXPECT_EQ(NodeNamed(m, "Neg_2")->input(0), "r") << "Neg reads Relu's fp16 output directly";
  EXPECT_EQ(DeclaredType(m, "z"), kF32);
}

TEST(ConvertToFloat16, AModelAlreadyInFloat16IsLeftAlone) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat16, {2});
  b.AddOutput("y", DataType::kFloat16, {2});
  b.AddFloat16Bits("w", {2}, {FloatToHalf(1.0f), FloatToHalf(2.0f)});
  b.AddNode("Mul", {"x", "w"}, {"y"});
  auto m = Parse(b.Serialize());
  const std::string before = m.SerializeAsString();
  auto r = Convert(m);
  EXPECT_TRUE(r.already_fp16);
  EXPECT_THAT(r.message, HasSubstr("float16 already"));
  EXPECT_EQ(m.SerializeAsString(), before);
}

TEST(ConvertToFloat16, SubgraphNodeStaysFloat32AndReadsOuterValuesInFloat32) {
  // If(cond) { then: Relu(outer) } else { Neg(outer) }, where outer = x * w.
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {3});
  b.AddInput("cond", DataType::kBool, {});
  b.AddOutput("y", DataType::kFloat, {3});
  b.AddFloatInitializer("w", {3}, 1.0f, 7);
  b.AddNode("Mul", {"x", "w"}, {"outer"});
  auto m = Parse(b.Serialize());
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("If");
  n->set_name("If_1");
  n->add_input("cond");
  n->add_output("y");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(branch);
    auto* sn = g->add_node();
    sn->set_op_type(std::string(branch) == "then_branch" ? "Relu" : "Neg");
    sn->add_input("outer");
    sn->add_output(std::string(branch) + "_out");
    auto* o = g->add_output();
    o->set_name(std::string(branch) + "_out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(kF32);
  }
  auto r = Convert(m);
  ASSERT_EQ(r.kept_fp32.size(), 1u);
  EXPECT_EQ(r.kept_fp32[0].name, "If_1");
  EXPECT_THAT(r.kept_fp32[0].reason, HasSubstr("subgraph"));
  const auto& then_node = NodeNamed(m, "If_1")->attribute(0).g().node(0);
  EXPECT_EQ(TypeOf(m, then_node.input(0)), kF32) << "the subgraph reads the outer value through a Cast to fp32";
  EXPECT_NE(then_node.input(0), "outer");
}

TEST(ConvertToFloat16, UnnamedNodesAreNamedSoReportsCanNameThem) {
  auto m = MatMulAddRelu();
  m.mutable_graph()->mutable_node(0)->clear_name();
  auto r = Convert(m);
  EXPECT_EQ(r.nodes_named, 1);
  EXPECT_THAT(r.converted, Contains("MatMul_0"));
}

TEST(ConvertToFloat16, ClippingRangeBeyondFloat16IsRefused) {
  auto m = MatMulAddRelu();
  ConvertOptions o;
  o.max_finite = 1e6f;
  auto r = ConvertToFloat16(m, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("65504"));
}

}  // namespace
}  // namespace ortgpu::precision
