#include "tune/candidates.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace ortgpu::tune {
namespace {

bool Mentions(const std::vector<Rejected>& rejected, const std::string& candidate_part, const std::string& reason_part) {
  return std::any_of(rejected.begin(), rejected.end(), [&](const Rejected& r) {
    return r.candidate.find(candidate_part) != std::string::npos && r.reason.find(reason_part) != std::string::npos;
  });
}

ModelTraits Batching(int64_t max_batch) {
  ModelTraits t;
  t.max_batch_size = max_batch;
  return t;
}

TEST(Candidates, GraphsAreNeverProposedForAVariableSequenceDim) {
  ModelTraits bert = Batching(64);
  bert.variable_non_batch_dim = true;
  const EngineSpace space = BuildEngineSpace(bert, {});
  ASSERT_FALSE(space.choices.empty());
  for (const EngineChoice& e : space.choices) EXPECT_FALSE(e.cuda_graphs) << e.Key();
  EXPECT_TRUE(Mentions(space.rejected, "CUDA graphs", "fixed shapes"));
  for (const ServedCandidate& c : BuildServedCandidates(space.choices, space.batches, bert, {}, nullptr)) {
    EXPECT_FALSE(c.engine.cuda_graphs) << c.Key();
  }
}

TEST(Candidates, GraphsNeedBoundIo) {
  ModelTraits t = Batching(8);
  t.io_bindable = false;
  const EngineSpace space = BuildEngineSpace(t, {});
  for (const EngineChoice& e : space.choices) EXPECT_FALSE(e.cuda_graphs);
  EXPECT_TRUE(Mentions(space.rejected, "CUDA graphs", "bound"));
}

TEST(Candidates, FixedShapesOfferGraphsOnlyOnPaddedBatches) {
  const ModelTraits t = Batching(32);
  const EngineSpace space = BuildEngineSpace(t, {});
  EXPECT_TRUE(std::any_of(space.choices.begin(), space.choices.end(), [](const EngineChoice& e) { return e.cuda_graphs; }));
  std::vector<Rejected> rejected;
  const auto served = BuildServedCandidates(space.choices, space.batches, t, {}, &rejected);
  for (const ServedCandidate& c : served) {
    if (c.engine.cuda_graphs) EXPECT_TRUE(c.pad_to_preferred) << c.Key();
  }
  EXPECT_TRUE(Mentions(rejected, "graphs=1", "padded"));
}

TEST(Candidates, PrecisionOutsideTheAccuracyBudgetIsNotACandidate) {
  ModelTraits t = Batching(8);
  t.precisions_within_budget = {Precision::kTf32, Precision::kFp32, Precision::kFp16};
  const EngineSpace space = BuildEngineSpace(t, {});
  for (const EngineChoice& e : space.choices) EXPECT_NE(e.precision, Precision::kMixed);
  EXPECT_TRUE(std::any_of(space.choices.begin(), space.choices.end(),
                          [](const EngineChoice& e) { return e.precision == Precision::kFp16; }));
  EXPECT_TRUE(Mentions(space.rejected, "precision mixed", "accuracy budget"));
}

TEST(Candidates, BatchesAboveMaxBatchSizeOrMemoryAreNot) {
  ModelTraits t = Batching(16);
  t.gpu_memory_limit_bytes = int64_t{1} << 30;
  t.weight_bytes = 100 << 20;
  t.activation_bytes_per_row = 100 << 20;  // batch 16 alone needs 1.7 GiB
  const EngineSpace space = BuildEngineSpace(t, {});
  EXPECT_EQ(space.batches, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_TRUE(Mentions(space.rejected, "batch 32", "max_batch_size 16"));
  EXPECT_TRUE(Mentions(space.rejected, "batch 16", "GPU memory limit"));
  std::vector<Rejected> rejected;
  SpaceOptions four;
  four.instances = {1, 2, 4};
  for (const ServedCandidate& c : BuildServedCandidates(space.choices, space.batches, t, four, &rejected)) {
    EXPECT_LE(EstimatedMemoryBytes(c, t), *t.gpu_memory_limit_bytes) << c.Key();
  }
  EXPECT_TRUE(Mentions(rejected, "inst=4", "GPU memory limit"));
}

TEST(Candidates, AModelThatDoesNotBatchRunsBatchOneWithoutQueueOrPadding) {
  const ModelTraits t = Batching(0);
  const EngineSpace space = BuildEngineSpace(t, {});
  EXPECT_EQ(space.batches, (std::vector<int64_t>{1}));
  for (const ServedCandidate& c : BuildServedCandidates(space.choices, space.batches, t, {}, nullptr)) {
    EXPECT_FALSE(c.pad_to_preferred);
    EXPECT_EQ(c.max_queue_delay_us, 0);
  }
}

TEST(Candidates, DefaultsComeFirst) {
  const EngineSpace space = BuildEngineSpace(Batching(8), {});
  ASSERT_FALSE(space.choices.empty());
  EXPECT_EQ(space.choices.front(), EngineChoice{});
}

TEST(Candidates, SimplerOrderIsInstancesThenGraphsThenKnobs) {
  ServedCandidate one{.instances = 1};
  one.engine.prefer_nhwc = true;
  one.engine.precision = Precision::kFp16;
  ServedCandidate two{.instances = 2};
  EXPECT_TRUE(SimplerThan(one, two));  // fewer instances first, however many knobs

  ServedCandidate graphs{.pad_to_preferred = true};
  graphs.engine.cuda_graphs = true;
  ServedCandidate knobs{.pad_to_preferred = true, .max_queue_delay_us = 100};
  knobs.engine.prefer_nhwc = true;
  EXPECT_TRUE(SimplerThan(knobs, graphs));  // then no graphs

  ServedCandidate nhwc;
  nhwc.engine.prefer_nhwc = true;
  EXPECT_TRUE(SimplerThan(ServedCandidate{}, nhwc));  // then fewer knobs
  EXPECT_FALSE(SimplerThan(ServedCandidate{}, ServedCandidate{}));
  EXPECT_TRUE(SimplerThan(ServedCandidate{.batch = 8}, ServedCandidate{.batch = 32}));
}

TEST(Candidates, TheFusionAxisAndPaddingModeAreInTheKeysOnlyWhenSet) {
  EngineChoice fused;
  fused.fuse_conv_bias = true;
  EXPECT_EQ(EngineChoice{}.Key(), "tf32 nhwc=0 graphs=0 conv=EXHAUSTIVE");  // keys of older histories still match
  EXPECT_EQ(fused.Key(), "tf32 nhwc=0 graphs=0 conv=EXHAUSTIVE fuse=1");
  ServedCandidate always{.batch = 32, .pad_to_preferred = true, .adaptive_padding = false};
  EXPECT_NE(always.Key().find("pad=1 delay=0us workers=2 adaptive=0"), std::string::npos) << always.Key();
  const ServedCandidate adaptive{.batch = 32, .pad_to_preferred = true};
  EXPECT_EQ(adaptive.Key().find("adaptive"), std::string::npos);
  ServedCandidate f;
  f.engine = fused;
  EXPECT_EQ(KnobsAwayFromDefaults(f), 1);
}

TEST(Candidates, PaddedCandidatesTakeEachAdaptivePaddingValueOfTheSpace) {
  SpaceOptions s;
  s.instances = {1};
  s.workers = {2};
  s.queue_delays_us = {0};
  s.adaptive_padding = {false};
  const auto candidates = BuildServedCandidates({EngineChoice{}}, {32}, Batching(32), s, nullptr);
  ASSERT_EQ(candidates.size(), 2u);  // padded (every batch) and unpadded
  for (const ServedCandidate& c : candidates) {
    if (c.pad_to_preferred) EXPECT_FALSE(c.adaptive_padding);
  }
}

}  // namespace
}  // namespace ortgpu::tune
