#include "serve/repository/warmup_inputs.h"

#include <gtest/gtest.h>

#include "serve/repository/model_config.h"

namespace ortgpu::serve {
namespace {

inference::ModelConfig Parse(const char* text) {
  auto parsed = ParseModelConfig(text, "m/config.pbtxt");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed->config;
}

TEST(WarmupInputsTest, VariableDimsTakeOneTwoSixteenAndSixtyFourInTurnWithOneBatchRow) {
  auto config = Parse(R"pb(
    max_batch_size: 4
    input [ { name: "x" data_type: TYPE_FP32 dims: [ 2, -1 ] } ]
  )pb");
  auto c = GenerateWarmupCandidates(config, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*c)[i].inputs[0].shape, (std::vector<int64_t>{1, 2, kWarmupDimSizes[i]}));
    EXPECT_EQ((*c)[i].description, "variable dims " + std::to_string(kWarmupDimSizes[i]));
  }
  const float v = (*c)[0].inputs[0].data_as<float>()[0];
  EXPECT_TRUE(v >= 0.0f && v < 1.0f) << v;
}

TEST(WarmupInputsTest, IntegersAreOnesOrTheSampleRateStringsAreNonEmptyNumbers) {
  auto config = Parse(R"pb(
    input [ { name: "sr" data_type: TYPE_INT64 dims: [ 1 ] },
            { name: "steps" data_type: TYPE_INT32 dims: [ 3 ] },
            { name: "text" data_type: TYPE_STRING dims: [ 2 ] },
            { name: "flag" data_type: TYPE_BOOL dims: [ 1 ] } ]
  )pb");
  auto c = GenerateWarmupCandidates(config, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->size(), 1u) << "fixed dims: one candidate";
  const auto& in = (*c)[0].inputs;
  EXPECT_EQ(in[0].data_as<int64_t>()[0], 16000);
  EXPECT_EQ(in[1].data_as<int32_t>()[2], 1);
  EXPECT_EQ(in[2].strings, (std::vector<std::string>{"1", "1"}));
  EXPECT_EQ(in[3].data_as<uint8_t>()[0], 1);
  EXPECT_EQ((*c)[0].description, "fixed dims, sr=16000");
  EXPECT_EQ(IntegerHint("sampling_rate"), 16000);
  EXPECT_EQ(IntegerHint("input_ids"), 1);
}

TEST(WarmupInputsTest, GivenInputsAreUsedAsTheyAreAndCheckedAgainstTheConfig) {
  auto config = Parse(R"pb(
    max_batch_size: 2
    input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "rate" data_type: TYPE_INT64 dims: [ 1 ] } ]
  )pb");
  Tensor rate = Tensor::Zeros("rate", DataType::kInt64, {1, 1});
  rate.data_as<int64_t>()[0] = 8000;
  auto c = GenerateWarmupCandidates(config, WarmupHints{{{"rate", rate}}, {}, {}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // One candidate per size of x's variable dim, each with the given rate.
  ASSERT_EQ(c->size(), std::size(kWarmupDimSizes));
  for (const auto& candidate : *c) {
    ASSERT_EQ(candidate.inputs.size(), 2u) << candidate.description;
    EXPECT_EQ(candidate.inputs[1].name, "rate");
    EXPECT_EQ(candidate.inputs[1].shape, (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(candidate.inputs[1].data_as<int64_t>()[0], 8000) << candidate.description;
  }
  auto wrong =
      GenerateWarmupCandidates(config, WarmupHints{{{"rate", Tensor::Zeros("rate", DataType::kInt32, {1, 1})}}, {}, {}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("the warm-up input given for 'rate' is int32"), std::string::npos)
      << wrong.status().message();
}

TEST(WarmupInputsTest, WarmupShapeFlagsSizeDimsByNameOrAWholeInputLikeShape) {
  auto config = Parse(R"pb(
    max_batch_size: 4
    input [ { name: "audio" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "state" data_type: TYPE_FP32 dims: [ 2, -1 ] } ]
  )pb");
  TensorInfo audio;
  audio.name = "audio";
  audio.dtype = DataType::kFloat;
  audio.shape = {-1, -1};
  audio.dim_names = {"batch", "samples"};
  TensorInfo state;
  state.name = "state";
  state.dtype = DataType::kFloat;
  state.shape = {-1, 2, -1};
  state.dim_names = {"batch", "", "hidden"};
  WarmupHints hints{{}, {{"samples", {512}}}, {audio, state}};
  auto c = GenerateWarmupCandidates(config, hints);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->size(), 4u) << "'hidden' still varies";
  for (const auto& candidate : *c) EXPECT_EQ(candidate.inputs[0].shape, (std::vector<int64_t>{1, 512}));
  EXPECT_EQ((*c)[2].inputs[1].shape, (std::vector<int64_t>{1, 2, 16}));
  hints.shapes["state"] = {1, 2, 128};
  c = GenerateWarmupCandidates(config, hints);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->size(), 1u) << "every dim sized: one candidate";
  EXPECT_EQ((*c)[0].inputs[1].shape, (std::vector<int64_t>{1, 2, 128}));
  hints.shapes["state"] = {1, 3, 128};
  EXPECT_NE(GenerateWarmupCandidates(config, hints).status().message().find("--warmup-shape state:1x3x128 gives"),
            std::string::npos);
}

TEST(WarmupInputsTest, CandidatesPastTheByteBoundAreLeftOut) {
  // Five variable dims: 16^5 floats are 4 MiB (kept), 64^5 are 4 GiB (left out).
  auto config = Parse(R"pb(input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, -1, -1, -1, -1 ] } ])pb");
  auto c = GenerateWarmupCandidates(config, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->size(), 3u);
  // Fixed dims past the bound: the model cannot be warmed up, and says so.
  auto huge = Parse(R"pb(input [ { name: "x" data_type: TYPE_FP32 dims: [ 100000000000 ] } ])pb");
  auto h = GenerateWarmupCandidates(huge, {});
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("warm-up sample of input 'x' has shape 100000000000"), std::string::npos)
      << h.status().message();
}

}  // namespace
}  // namespace ortgpu::serve
