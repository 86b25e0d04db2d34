#include "serve/scheduler/batch_costs.h"

#include <gtest/gtest.h>

#include <map>

#include "fakes/fake_clock.h"

namespace ortgpu::serve {
namespace {

// A runner whose every batch takes the time the test scripts for its size,
// on a FakeClock (the clock moves by that much during the run): no sleeps.
class ScriptedCostRunner : public InstanceRunner {
 public:
  explicit ScriptedCostRunner(testing::FakeClock& clock) : clock_(clock) {}
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    const int64_t rows = inputs[0].shape[0];
    std::vector<int64_t>& script = ns_by_rows[rows];
    const size_t k = runs[rows]++;
    clock_.Advance(script.empty() ? 0 : script[k % script.size()]);
    if (rows == fail_at) return Internal("device lost");
    return inputs;
  }
  std::map<int64_t, std::vector<int64_t>> ns_by_rows;  // each run of a size takes the next time, cycling
  std::map<int64_t, size_t> runs;
  int64_t fail_at = -1;

 private:
  testing::FakeClock& clock_;
};

std::vector<Tensor> OneRow() { return {Tensor::Zeros("x", DataType::kFloat, {1, 4})}; }

TEST(BatchCostsTest, Issue25WarmUpMeasuresTheMedianRunOfEverySizeOnTheRunnersOwnPath) {
  testing::FakeClock clock;
  ScriptedCostRunner runner(clock);
  // One slow run of each size (a page fault, another process) does not move the median.
  runner.ns_by_rows[1] = {1'200'000, 9'000'000, 1'100'000, 1'250'000, 1'300'000};
  runner.ns_by_rows[32] = {4'100'000, 4'000'000, 20'000'000, 4'200'000, 4'150'000};
  auto costs = MeasureBatchCosts(runner, OneRow(), {1, 32}, clock);
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  EXPECT_EQ(costs->sizes, (std::vector<int64_t>{1, 32}));
  EXPECT_EQ(costs->Of(1), 1'250'000);
  EXPECT_EQ(costs->Of(32), 4'150'000);
  EXPECT_EQ(costs->Of(16), -1);  // not measured
  EXPECT_EQ(runner.runs[1], static_cast<size_t>(kBatchCostRuns));
  EXPECT_EQ(runner.runs[32], static_cast<size_t>(kBatchCostRuns));
}

TEST(BatchCostsTest, ARunThatFailsWhileMeasuringNamesTheSize) {
  testing::FakeClock clock;
  ScriptedCostRunner runner(clock);
  runner.fail_at = 8;
  auto costs = MeasureBatchCosts(runner, OneRow(), {1, 8}, clock);
  ASSERT_FALSE(costs.ok());
  EXPECT_NE(costs.status().message().find("batch size 8"), std::string::npos) << costs.status().ToString();
  EXPECT_NE(costs.status().message().find("device lost"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::serve
