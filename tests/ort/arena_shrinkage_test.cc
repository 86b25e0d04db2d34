// Give-back (issue 27): a run larger than the warmed ones returns what it
// left in the session's arena (ORT's memory.enable_memory_arena_shrinkage,
// here on the CPU arena), and only such runs pay for it under auto.
#include <gtest/gtest.h>

#include "onnx/model_builder.h"
#include "ort/arena_stats.h"
#include "ort/batch_runner.h"

namespace ortgpu {
namespace {

// y = sum(x + x) over x [n], n free: the activation x + x grows with n,
// and is free once the run ends (the output is one number).
std::unique_ptr<Session> Doubler() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1}, {"n"});
  b.AddNode("Add", {"x", "x"}, {"t"});
  b.AddNode("ReduceSum", {"t"}, {"y"}, {{"keepdims", 0}});
  b.AddOutput("y", DataType::kFloat, {}, {});
  SessionOptions o;
  o.intra_op_threads = 1;
  auto s = Session::LoadFromBytes(b.Serialize(), o, "doubler");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

std::vector<Tensor> Values(int64_t n) { return {Tensor::Zeros("x", DataType::kFloat, {n})}; }

constexpr int64_t kLarge = 4 << 20;  // 16 MiB of inputs, and as much again of activations

uint64_t Reserved(const BatchRunner& runner) {
  auto stats = ReadArenaStats(runner.session());
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return stats.ok() ? stats->reserved : 0;
}

TEST(ArenaShrinkageTest, UnderAutoTheFirstPlannedRunAfterABurstGivesItsMemoryBack) {
  BatchRunner runner(Doubler(), ReshapeRules{});
  ASSERT_TRUE(runner.Run(Values(16)).ok());  // the warm-up
  runner.SetArenaShrinkage(ArenaShrinkage::kAuto, runner.largest_input_bytes());
  EXPECT_EQ(runner.largest_input_bytes(), 64u);
  ASSERT_TRUE(runner.Run(Values(16)).ok());
  EXPECT_EQ(runner.arena_shrinks(), 0) << "a planned size keeps its chunks";
  for (int i = 0; i < 2; ++i) {
    auto large = runner.Run(Values(kLarge));
    ASSERT_TRUE(large.ok()) << large.status().ToString();
  }
  EXPECT_EQ(runner.arena_shrinks(), 0) << "the burst keeps its chunks while it lasts";
  EXPECT_GE(Reserved(runner), uint64_t{kLarge} * 4);
  ASSERT_TRUE(runner.Run(Values(16)).ok());
  EXPECT_EQ(runner.arena_shrinks(), 1);
  EXPECT_LT(Reserved(runner), uint64_t{kLarge} * 4) << "after the burst the arena returned to the plan";
  ASSERT_TRUE(runner.Run(Values(16)).ok());
  EXPECT_EQ(runner.arena_shrinks(), 1) << "once per burst";
}

TEST(ArenaShrinkageTest, OffKeepsWhatTheLargestRunTookAndOnShrinksEveryRun) {
  BatchRunner kept(Doubler(), ReshapeRules{});
  ASSERT_TRUE(kept.Run(Values(16)).ok());
  kept.SetArenaShrinkage(ArenaShrinkage::kOff, kept.largest_input_bytes());
  ASSERT_TRUE(kept.Run(Values(kLarge)).ok());
  EXPECT_EQ(kept.arena_shrinks(), 0);
  EXPECT_GE(Reserved(kept), uint64_t{kLarge} * 4) << "ORT's default: the arena keeps it";
  BatchRunner every(Doubler(), ReshapeRules{});
  every.SetArenaShrinkage(ArenaShrinkage::kOn, 0);
  ASSERT_TRUE(every.Run(Values(16)).ok());
  ASSERT_TRUE(every.Run(Values(16)).ok());
  EXPECT_EQ(every.arena_shrinks(), 2);
}

TEST(ArenaShrinkageTest, ParsesTheParameterAndNamesItWhenWrong) {
  EXPECT_EQ(*ParseArenaShrinkage(""), ArenaShrinkage::kAuto);
  EXPECT_EQ(*ParseArenaShrinkage("auto"), ArenaShrinkage::kAuto);
  EXPECT_EQ(*ParseArenaShrinkage("on"), ArenaShrinkage::kOn);
  EXPECT_EQ(*ParseArenaShrinkage("false"), ArenaShrinkage::kOff);
  auto bad = ParseArenaShrinkage("sometimes");
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("parameter arena_shrinkage is 'sometimes'"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu
