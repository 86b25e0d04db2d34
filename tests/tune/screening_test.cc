#include "tune/screening.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"
#include "fakes/fake_measurer.h"
#include "tune/evaluator.h"
#include "tune/search.h"

namespace ortgpu::tune {
namespace {

using ortgpu::testing::FakeClock;
using ortgpu::testing::FakeMeasurer;

TEST(Screening, TheOrderLetsTheFusionComeAfterNhwc) {
  const auto& order = ScreeningOrder();
  auto at = [&](Knob k) { return std::find(order.begin(), order.end(), k) - order.begin(); };
  EXPECT_LT(at(Knob::kPrecision), at(Knob::kPreferNhwc));
  EXPECT_LT(at(Knob::kPreferNhwc), at(Knob::kFuseConvBias));
  EXPECT_EQ(order.back(), Knob::kCudaGraphs);
}

TEST(Screening, FlipsAreTheOtherValuesOfOneKnob) {
  ModelTraits t;
  t.precisions_within_budget = {Precision::kTf32, Precision::kFp32, Precision::kFp16};
  const SpaceOptions space;  // precisions tf32, fp32, fp16, mixed
  const std::vector<EngineChoice> p = Flips(Knob::kPrecision, EngineChoice{}, t, space);
  ASSERT_EQ(p.size(), 2u);  // fp32 and fp16; mixed is not within the budget
  EXPECT_EQ(p[0].precision, Precision::kFp32);
  EXPECT_EQ(p[1].precision, Precision::kFp16);
  EngineChoice nhwc;
  nhwc.prefer_nhwc = true;
  const std::vector<EngineChoice> fuse = Flips(Knob::kFuseConvBias, nhwc, t, space);
  ASSERT_EQ(fuse.size(), 1u);
  EXPECT_TRUE(fuse[0].fuse_conv_bias);
  EXPECT_TRUE(fuse[0].prefer_nhwc);  // the rest of the choice is kept
  SpaceOptions one;
  one.cuda_graphs = {false};
  EXPECT_TRUE(Flips(Knob::kCudaGraphs, EngineChoice{}, t, one).empty());
}

TEST(Screening, KnobsThatCannotMatterSaySo) {
  ModelTraits t;
  t.has_conv = false;
  t.variable_non_batch_dim = true;
  const SpaceOptions space;
  EXPECT_NE(KnobSkipped(Knob::kFuseConvBias, t, space).find("no Conv node"), std::string::npos);
  EXPECT_NE(KnobSkipped(Knob::kCudaGraphs, t, space).find("fixed shapes"), std::string::npos);
  EXPECT_EQ(KnobSkipped(Knob::kPrecision, t, space), "");
}

TEST(Screening, TheThresholdIsTheNoiseOrTheFloor) {
  Measurement a;
  Measurement b;
  EXPECT_DOUBLE_EQ(FlipThreshold(a, b, 0.02), 0.02);
  a.rel_noise = 0.02;
  b.rel_noise = 0.03;
  EXPECT_DOUBLE_EQ(FlipThreshold(a, b, 0.02), 0.05);
}

TEST(Screening, TheBatchIsTheLargestValidUpToTheScreeningBatch) {
  SpaceOptions s;
  EXPECT_EQ(ScreeningBatch(s, {1, 2, 4, 8, 16, 32, 64, 128}), 32);
  EXPECT_EQ(ScreeningBatch(s, {1, 2, 4, 8}), 8);
  EXPECT_EQ(ScreeningBatch(s, {1}), 1);
}

TEST(Screening, CurveEnginesAreTheChoiceAndItsFallback) {
  EngineChoice graphs;
  graphs.precision = Precision::kFp16;
  graphs.cuda_graphs = true;
  auto e = CurveEngines(graphs, 2);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_FALSE(e[1].cuda_graphs);
  EXPECT_EQ(e[1].precision, Precision::kFp16);
  EngineChoice fp16;
  fp16.precision = Precision::kFp16;
  e = CurveEngines(fp16, 2);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1], EngineChoice{});
  EXPECT_EQ(CurveEngines(EngineChoice{}, 2).size(), 1u);
  EXPECT_EQ(CurveEngines(graphs, 1).size(), 1u);
}

// A flip must beat the current choice by more than the noise: 1.5% faster
// is within the 2% floor; 4% faster is within noise of 2.5% on each side.
TEST(Screening, AFlipWithinTheNoiseIsNotKept) {
  FakeMeasurer m;
  m.SetInProcess([](const EngineChoice& e, int64_t) -> Expected<Measurement> {
    Measurement x;
    x.latency_ms = e.prefer_nhwc ? 9.85 : e.cuda_graphs ? 9.6 : 10.0;
    x.rel_noise = e.cuda_graphs || e == EngineChoice{} ? 0.025 : 0.001;
    return x;
  });
  ModelTraits t;
  t.max_batch_size = 32;
  SpaceOptions space;
  space.precisions = {Precision::kTf32};
  space.conv_searches = {ConvAlgoSearch::kExhaustive};
  space.fuse_conv_bias = {false};
  SearchOptions options;
  SearchResult result;
  History h;
  FakeClock clock;
  Evaluator eval(options, h, clock, result);
  auto screened = ScreenEngines(t, space, options, 32, m, eval, result);
  ASSERT_TRUE(screened.ok());
  ASSERT_TRUE(screened->has_value());
  EXPECT_EQ(**screened, EngineChoice{});
  ASSERT_EQ(result.screening.size(), 2u);
  for (const ScreenStep& s : result.screening) {
    EXPECT_FALSE(s.kept);
    EXPECT_NE(s.note.find("within the noise"), std::string::npos) << s.note;
  }
  EXPECT_NEAR(result.screening[1].threshold, 0.05, 1e-9);
}

TEST(Screening, WhenTheDefaultFailsThereIsNothingToScreen) {
  FakeMeasurer m;
  m.SetInProcess([](const EngineChoice&, int64_t) -> Expected<Measurement> { return Internal("CUDA out of memory"); });
  ModelTraits t;
  t.max_batch_size = 8;
  SearchOptions options;
  SearchResult result;
  History h;
  FakeClock clock;
  Evaluator eval(options, h, clock, result);
  auto screened = ScreenEngines(t, SpaceOptions{}, options, 8, m, eval, result);
  ASSERT_TRUE(screened.ok());
  EXPECT_FALSE(screened->has_value());
  ASSERT_FALSE(result.rejected.empty());
  EXPECT_NE(result.rejected.back().reason.find("CUDA out of memory"), std::string::npos);
  EXPECT_EQ(m.in_process_calls.size(), 1u);
}

}  // namespace
}  // namespace ortgpu::tune
