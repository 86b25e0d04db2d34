// The fused graph in ONNX Runtime: a BERT layer fused (MultiHeadAttention,
// SkipLayerNormalization) computes what the torch export computes, on the
// CPU provider in float32; and ConvertPrecision keeps a fusion only when the
// fused model runs within the budget, converting again without it when not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fusion/bert_layer_model.h"
#include "fusion/fusion.h"
#include "ort/accuracy.h"
#include "ort/random_inputs.h"
#include "precision/evaluate.h"
#include "precision/precision.h"

namespace ortgpu::precision {
namespace {

using ::testing::HasSubstr;

std::vector<Tensor> LayerInputs() {
  Tensor x = Tensor::Zeros("x", DataType::kFloat, {2, 5, 8});
  FillRandom(x, 7, {});
  Tensor mask = Tensor::Zeros("mask", DataType::kFloat, {2, 1, 5, 5});
  float* m = mask.data_as<float>();
  for (int q = 0; q < 5; ++q) m[25 + q * 5 + 4] = -10000.0f;  // the second row's last key is padding
  std::vector<Tensor> inputs;
  inputs.push_back(std::move(x));
  inputs.push_back(std::move(mask));
  return inputs;
}

class FusedModelInOrt : public ::testing::TestWithParam<bool> {};

TEST_P(FusedModelInOrt, BertLayerFusedComputesWhatTheExportComputes) {
  auto original = fusion::test_models::BertLayer({.infer_heads = GetParam()});
  auto fused = original;
  // Unpacked: the CPU provider has no kernel for MultiHeadAttention's packed QKV.
  ASSERT_TRUE(fusion::FuseForCuda(fused, {.pack_qkv = false}).any());
  OrtModelRunner runner(Float32Reference({}));
  auto inputs = LayerInputs();
  auto ref = runner.Run(original, inputs);
  auto got = runner.Run(fused, inputs);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  ASSERT_TRUE(got.ok()) << got.status().message();
  DeviationReport d = CompareDeviation(*got, *ref);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_LT(d.outputs[0].max_abs_error, 1e-4);
  EXPECT_GT(d.outputs[0].cosine_min, 0.99999);
}

INSTANTIATE_TEST_SUITE_P(HeadsStatedOrInferred, FusedModelInOrt, ::testing::Bool());

// Runs models on the CPU, except that it fails any model holding `refused`,
// as a provider without a kernel for it would.
class RefusingRunner : public ModelRunner {
 public:
  explicit RefusingRunner(std::string refused) : refused_(std::move(refused)), inner_({}) {}
  Expected<std::vector<Tensor>> Run(const ::onnx::ModelProto& model, const std::vector<Tensor>& inputs) override {
    for (const auto& n : model.graph().node()) {
      if (n.op_type() == refused_) return InvalidArgument("no kernel for " + refused_);
    }
    return inner_.Run(model, inputs);
  }

 private:
  std::string refused_;
  OrtModelRunner inner_;
};

// ConvertPrecision with fusion on the BERT layer, judged against true
// float32 on the CPU, the converted models run by `candidate`.
Expected<PrecisionResult> ConvertFused(ModelRunner& candidate, bool pack_qkv = false) {
  OrtModelRunner reference(Float32Reference({}));
  PrecisionSeams seams;
  seams.reference = &reference;
  seams.candidate = &candidate;
  PrecisionOptions options;
  options.fuse = true;
  options.pack_qkv = pack_qkv;
  return ConvertPrecision(fusion::test_models::BertLayer(), LayerInputs(), options, seams);
}

TEST(ConvertPrecisionFusion, AFusedModelThatDoesNotRunIsConvertedAgainWithoutFusingAndSaysWhy) {
  RefusingRunner candidate("MultiHeadAttention");
  auto r = ConvertFused(candidate);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->within_budget());
  EXPECT_FALSE(r->fusion.any());
  EXPECT_THAT(r->fusion_dropped, HasSubstr("1 attention and 1 skip-layer-norm fusions dropped"));
  EXPECT_THAT(r->fusion_dropped, HasSubstr("no kernel for MultiHeadAttention"));
  EXPECT_EQ(fusion::test_models::CountOp(r->model, "MultiHeadAttention"), 0);
  EXPECT_EQ(fusion::test_models::CountOp(r->model, "Softmax"), 1);
}

TEST(ConvertPrecisionFusion, AFusedModelThatRunsWithinBudgetIsKeptAndConverted) {
  // The candidate runs the fused float16 model; where the CPU provider has
  // no float16 kernel for a fused op, the test sees the fallback instead.
  OrtModelRunner candidate({});
  auto r = ConvertFused(candidate);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->within_budget());
  if (r->fusion.any()) {
    EXPECT_EQ(r->fusion.attention, 1);
    EXPECT_EQ(fusion::test_models::CountOp(r->model, "MultiHeadAttention"), 1);
    EXPECT_TRUE(r->fusion_dropped.empty());
  } else {
    EXPECT_THAT(r->fusion_dropped, HasSubstr("dropped"));
  }
}

TEST(ConvertPrecisionFusion, PackedProjectionsTheCpuCannotRunAreDroppedWithTheReason) {
  OrtModelRunner candidate({});
  auto r = ConvertFused(candidate, /*pack_qkv=*/true);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->within_budget());
  EXPECT_FALSE(r->fusion.any());
  EXPECT_THAT(r->fusion_dropped, HasSubstr("the fused model did not run"));
  EXPECT_EQ(fusion::test_models::CountOp(r->model, "MultiHeadAttention"), 0);
}

TEST(ConvertPrecisionFusion, OffByDefault) {
  PrecisionOptions options;
  EXPECT_FALSE(options.fuse);
  auto r = ConvertPrecision(fusion::test_models::BertLayer(), {}, options, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->fusion.any());
  EXPECT_EQ(fusion::test_models::CountOp(r->model, "Softmax"), 1);
}

}  // namespace
}  // namespace ortgpu::precision
