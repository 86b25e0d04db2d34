// The fusions on a BERT encoder layer as torch exports it, and the cases
// where fusing would change what the graph computes.
#include "fusion/fusion.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fusion/bert_layer_model.h"
#include "fusion/graph_index.h"

namespace ortgpu::fusion {
namespace {

using test_models::BertLayer;
using test_models::CountOp;
using test_models::FirstOp;

TEST(FuseForCuda, TorchSdpaLayerBecomesOneMultiHeadAttentionAndOneSkipLayerNorm) {
  auto m = BertLayer();
  const int before = m.graph().node_size();
  FusionReport r = FuseForCuda(m, {.pack_qkv = false});
  EXPECT_EQ(r.attention, 1);
  EXPECT_EQ(r.skip_layer_norm, 1);
  EXPECT_EQ(CountOp(m, "Softmax"), 0);
  EXPECT_EQ(CountOp(m, "IsNaN"), 0);
  EXPECT_EQ(CountOp(m, "Transpose"), 0);
  EXPECT_EQ(CountOp(m, "Reshape"), 0);
  EXPECT_EQ(CountOp(m, "Shape"), 0) << "the shape computation only the fused Reshapes read is removed";
  EXPECT_EQ(before - m.graph().node_size() + 2, r.nodes_removed);
  const auto* mha = FirstOp(m, "MultiHeadAttention");
  ASSERT_NE(mha, nullptr);
  EXPECT_EQ(mha->domain(), "com.microsoft");
  ASSERT_EQ(mha->input_size(), 6);
  EXPECT_EQ(mha->input(0), "qa");
  EXPECT_EQ(mha->input(1), "ka");
  EXPECT_EQ(mha->input(2), "va");
  EXPECT_EQ(mha->input(5), "mask");
  EXPECT_EQ(mha->output(0), "attn");
  EXPECT_EQ(IntAttr(*mha, "num_heads", 0), 2);
  EXPECT_NEAR(FloatAttr(*mha, "scale", 0), 0.5f, 1e-6) << "sqrt(1/sqrt(4)) on each of Q and K";
  bool ms = false;
  for (const auto& o : m.opset_import()) ms |= o.domain() == "com.microsoft" && o.version() == 1;
  EXPECT_TRUE(ms);
}

const ::onnx::TensorProto* Initializer(const ::onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

std::vector<double> Values(const ::onnx::ModelProto& m, const std::string& name) {
  auto v = GraphIndex(m.graph()).FloatValues(name);
  return v ? *v : std::vector<double>{};
}

TEST(FuseForCuda, TheThreeProjectionsArePackedIntoOneMatMulInMultiHeadAttentionsPackedLayout) {
  const auto original = BertLayer();
  auto m = original;
  FuseForCuda(m);
  const auto* mha = FirstOp(m, "MultiHeadAttention");
  ASSERT_NE(mha, nullptr);
  ASSERT_EQ(mha->input_size(), 6);
  EXPECT_EQ(mha->input(1), "") << "key and value come packed in the query";
  EXPECT_EQ(mha->input(2), "");
  EXPECT_EQ(mha->input(5), "mask");
  EXPECT_EQ(CountOp(m, "Add"), 0) << "the three bias Adds and the residual one are gone";
  EXPECT_EQ(CountOp(m, "MatMul"), 2) << "Q, K and V in one; the output projection";
  GraphIndex g(m.graph());
  const auto* reshape = g.ProducerIs(mha->input(0), "Reshape");
  ASSERT_NE(reshape, nullptr);
  EXPECT_EQ(g.IntValues(reshape->input(1)), (std::vector<int64_t>{0, 0, 2, 3, 4})) << "[batch, seq, heads, 3, size]";
  const auto* mm = g.ProducerIs(reshape->input(0), "MatMul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->input(0), "h");
  const auto* w = Initializer(m, mm->input(1));
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->dims_size(), 2);
  EXPECT_EQ(w->dims(0), 8);
  EXPECT_EQ(w->dims(1), 24);
  const auto packed = Values(m, w->name());
  const std::vector<double> wq = Values(original, "Wq"), wk = Values(original, "Wk"), wv = Values(original, "Wv");
  const std::vector<double>* sides[3] = {&wq, &wk, &wv};
  ASSERT_EQ(packed.size(), 8u * 24u);
  for (int r = 0; r < 8; ++r) {
    for (int head = 0; head < 2; ++head) {
      for (int t = 0; t < 3; ++t) {
        for (int j = 0; j < 4; ++j) {
          EXPECT_FLOAT_EQ(packed[r * 24 + (head * 3 + t) * 4 + j], (*sides[t])[r * 8 + head * 4 + j])
              << "row " << r << " head " << head << " projection " << t << " column " << j;
        }
      }
    }
  }
  std::vector<double> want;
  for (const char* b : {"bq", "bk", "bv"}) {
    auto v = Values(original, b);
    want.insert(want.end(), v.begin(), v.end());
  }
  EXPECT_EQ(Values(m, mha->input(3)), want) << "the bias is [bq, bk, bv], not interleaved";
  for (const char* gone : {"Wq", "Wk", "Wv", "bq", "bk", "bv"}) EXPECT_EQ(Initializer(m, gone), nullptr) << gone;
}

TEST(FuseForCuda, AProjectionSumReadOutsideTheAttentionLeavesTheProjectionsUnpacked) {
  auto m = BertLayer();
  m.mutable_graph()->add_output()->set_name("ka");  // the key projection's sum, also a graph output
  FusionReport r = FuseForCuda(m);
  EXPECT_EQ(r.attention, 1);
  const auto* mha = FirstOp(m, "MultiHeadAttention");
  ASSERT_NE(mha, nullptr);
  EXPECT_EQ(mha->input(0), "qa");
  EXPECT_EQ(mha->input(1), "ka");
  EXPECT_EQ(mha->input(2), "va");
  EXPECT_EQ(mha->input(3), "");
  EXPECT_EQ(CountOp(m, "MatMul"), 4);
}

TEST(FuseForCuda, DenseBiasReachedThroughIdentityIsFoldedIntoSkipLayerNorm) {
  auto m = BertLayer();
  FuseForCuda(m);
  const auto* skip = FirstOp(m, "SkipLayerNormalization");
  ASSERT_NE(skip, nullptr);
  ASSERT_EQ(skip->input_size(), 5);
  EXPECT_EQ(skip->input(0), "om");
  EXPECT_EQ(skip->input(1), "h");
  EXPECT_EQ(skip->input(4), "bo_init");
  EXPECT_EQ(skip->output(0), "y");
  EXPECT_EQ(CountOp(m, "Identity"), 0);
  // The first LayerNormalization reads the graph input, not a residual sum: left as it is.
  EXPECT_EQ(CountOp(m, "LayerNormalization"), 1);
}

TEST(FuseForCuda, WithoutTheNanGuardTheAttentionIsStillFused) {
  auto m = BertLayer({.guard = false});
  EXPECT_EQ(FuseForCuda(m).attention, 1);
}

TEST(FuseForCuda, HeadsWrittenAsMinusOneAreTakenFromTheProjectionWeights) {
  auto m = BertLayer({.infer_heads = true});
  EXPECT_EQ(FuseForCuda(m).attention, 1);
  const auto* mha = FirstOp(m, "MultiHeadAttention");
  ASSERT_NE(mha, nullptr);
  EXPECT_EQ(IntAttr(*mha, "num_heads", 0), 2);
}

TEST(FuseForCuda, AttentionWhoseProbabilitiesAreReadOutsideIsLeftAlone) {
  auto m = BertLayer({.guard = false, .probs_as_output = true});
  FusionReport r = FuseForCuda(m);
  EXPECT_EQ(r.attention, 0);
  EXPECT_EQ(CountOp(m, "Softmax"), 1);
}

TEST(FuseForCuda, AnAddThatMayBroadcastIsNotFusedIntoSkipLayerNorm) {
  // LayerNormalization(Add(x, mask-like input)): neither side is a dense
  // layer over the residual stream, so the shapes are not known to match.
  auto m = BertLayer();
  auto& g = *m.mutable_graph();
  for (auto& n : *g.mutable_node()) {
    if (n.op_type() == "Add" && n.output(0) == "res") n.set_input(0, "x");
  }
  std::vector<std::string> fused;
  EXPECT_EQ(FuseSkipLayerNorm(g, fused), 0);
}

TEST(RemoveUnread, KeepsGraphOutputsAndWhatSubgraphsRead) {
  auto m = BertLayer();
  auto& g = *m.mutable_graph();
  // An If whose branch reads "hs" keeps the Shape computation alive.
  auto* node = g.add_node();
  node->set_op_type("If");
  node->add_input("nan_never");
  node->add_output("if_out");
  auto* attr = node->add_attribute();
  attr->set_name("then_branch");
  attr->set_type(::onnx::AttributeProto::GRAPH);
  auto* inner = attr->mutable_g()->add_node();
  inner->set_op_type("Identity");
  inner->add_input("hs");
  inner->add_output("inner_out");
  g.add_output()->set_name("if_out");
  FuseForCuda(m);
  int shapes = 0;
  for (const auto& n : m.graph().node()) shapes += n.op_type() == "Shape";
  EXPECT_EQ(shapes, 1);
  EXPECT_NE(FirstOp(m, "If"), nullptr);
}

TEST(GraphIndex, ShapeTailFromConcatOfConstantsAndFromInitializer) {
  auto m = BertLayer();
  GraphIndex g(m.graph());
  auto tail = g.KnownShapeTail("split", 2);
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(*tail, (std::vector<int64_t>{2, 4}));
  EXPECT_FALSE(g.KnownShapeTail("split", 3).has_value()) << "the sequence length is computed at run time";
  EXPECT_EQ(g.Source("bo"), "bo_init");
  EXPECT_EQ(g.FloatValues("bo")->size(), 8u);
}

}  // namespace
}  // namespace ortgpu::fusion
