#include "onnx/graph_derivation.h"

#include <gtest/gtest.h>

#include "onnx.pb.h"
#include "onnx/model_builder.h"
#include "support/vit_attention_scale.h"

namespace ortgpu::onnx {
namespace {

TEST(GraphDerivation, Issue25VitAttentionScaleFromAShapeReadsNoData) {
  auto d = DeriveGraph(testing::VitAttentionScaleModel());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  for (const char* node : {"Shape_1", "Gather_2", "Cast_3", "Sqrt_4", "Div_5"}) {
    ASSERT_TRUE(d->nodes.count(node)) << node;
    EXPECT_FALSE(d->nodes.at(node).reads_data) << node << " derives only from q's shape and constants";
  }
  EXPECT_EQ(d->nodes.at("Cast_3").op_type, "Cast");
  const NodeDerivation& mul = d->nodes.at("Mul_6");
  EXPECT_TRUE(mul.reads_data);
  EXPECT_EQ(mul.data_input, "q");
  EXPECT_EQ(mul.data_source, "x");
  EXPECT_TRUE(d->nodes.at("Sqrt_7").reads_data) << "the same op on the data path reads data";
  EXPECT_TRUE(d->nodes.at("MatMul_0").reads_data);
  EXPECT_TRUE(d->selected_outputs.empty());
}

TEST(GraphDerivation, DetectionOutputsAfterNonMaxSuppressionAreSelected) {
  ModelBuilder b;
  b.AddInput("boxes_in", DataType::kFloat, {1, 10, 4});
  b.AddInput("scores_in", DataType::kFloat, {1, 1, 10});
  b.AddOutput("boxes", DataType::kFloat, {-1, 4}, {"n"});
  b.AddOutput("count", DataType::kInt64, {1});
  b.AddOutput("mean_score", DataType::kFloat, {});
  b.AddInt64Initializer("max_out", {1}, {5});
  b.AddInt64Initializer("col", {}, {2});
  b.AddNode("NonMaxSuppression", {"boxes_in", "scores_in", "max_out"}, {"selected"});  // NonMaxSuppression_0
  b.AddNode("Gather", {"selected", "col"}, {"index"}, {{"axis", 1}});
  b.AddNode("Squeeze", {"boxes_in"}, {"all_boxes"});
  b.AddNode("Gather", {"all_boxes", "index"}, {"boxes"}, {{"axis", 0}});
  b.AddNode("Shape", {"boxes"}, {"boxes_shape"});
  b.AddNode("Gather", {"boxes_shape", "col"}, {"count"}, {{"axis", 0}});
  b.AddNode("ReduceMean", {"scores_in"}, {"mean_score"}, {{"keepdims", 0}});
  auto d = DeriveGraph(b.Serialize());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE(d->selected_outputs.count("boxes"));
  EXPECT_EQ(d->selected_outputs.at("boxes"), "NonMaxSuppression 'NonMaxSuppression_0'");
  EXPECT_TRUE(d->selected_outputs.count("count")) << "a count taken from the selection's shape depends on it too";
  EXPECT_FALSE(d->selected_outputs.count("mean_score"));
  EXPECT_TRUE(IsSelectionOp("TopK"));
  EXPECT_TRUE(IsSelectionOp("NonZero"));
  EXPECT_FALSE(IsSelectionOp("Gather"));
}

TEST(GraphDerivation, ASubgraphReadingOuterDataReadsData) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto* g = model.mutable_graph();
  g->add_input()->set_name("x");
  g->add_input()->set_name("flag");
  g->add_output()->set_name("y");
  auto* shape = g->add_node();
  shape->set_name("shape");
  shape->set_op_type("Shape");
  shape->add_input("x");
  shape->add_output("x_shape");
  // If(flag): then -> Relu(x) read from the enclosing graph; else -> x_shape cast.
  auto* node = g->add_node();
  node->set_name("if");
  node->set_op_type("If");
  node->add_input("flag");
  node->add_output("y");
  // A branch of one node reading `input` from the enclosing graph.
  auto add_branch = [node](const char* attr, const char* name, const char* op, const char* input) {
    auto* a = node->add_attribute();
    a->set_name(attr);
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* n = a->mutable_g()->add_node();
    n->set_name(name);
    n->set_op_type(op);
    n->add_input(input);
    n->add_output(std::string(name) + "_y");
    a->mutable_g()->add_output()->set_name(std::string(name) + "_y");
  };
  add_branch("then_branch", "then_relu", "Relu", "x");
  add_branch("else_branch", "else_cast", "Cast", "x_shape");

  auto d = DeriveGraph(model.SerializeAsString());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->nodes.at("if").reads_data);
  EXPECT_TRUE(d->nodes.at("then_relu").reads_data);
  EXPECT_EQ(d->nodes.at("then_relu").data_source, "x");
  EXPECT_FALSE(d->nodes.at("else_cast").reads_data) << "x_shape comes from a Shape";
  EXPECT_FALSE(d->nodes.at("shape").reads_data);
}

TEST(GraphDerivation, InitializersListedAsInputsAreConstants) {
  ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {2});
  b.AddInput("bias", DataType::kFloat, {2});
  b.AddOutput("y", DataType::kFloat, {2});
  b.AddOutput("b2", DataType::kFloat, {2});
  b.AddFloatInitializer("bias", {2}, 1.0f, 1);
  b.AddNode("Add", {"x", "bias"}, {"y"});
  b.AddNode("Neg", {"bias"}, {"b2"});
  auto d = DeriveGraph(b.Serialize());
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->nodes.at("Add_0").reads_data);
  EXPECT_FALSE(d->nodes.at("Neg_1").reads_data);
}

TEST(GraphDerivation, BytesThatAreNotAModelAreRefused) {
  auto d = DeriveGraph("not a model \xff\xff\xff");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("ModelProto"), std::string::npos);
  EXPECT_FALSE(ReadGraphDerivation("/nonexistent/model.onnx").ok());
}

}  // namespace
}  // namespace ortgpu::onnx
