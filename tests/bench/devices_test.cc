#include "bench/devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ortgpu::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ConfigResult Result(int64_t batch, double items_per_s, double p50_ms) {
  ConfigResult r;
  r.config.batch = batch;
  r.config.variant.name = "io=bound";
  r.stats.count = 100;
  r.stats.items_per_s = items_per_s;
  r.stats.p50_ms = p50_ms;
  r.stats.stable = true;
  return r;
}

// The benchmark as a fake: each GPU's throughput scaled by its speed.
std::function<Expected<BenchReport>(const BenchOptions&)> FakeBench(std::map<int, double> speed,
                                                                    std::vector<std::string>* device_ids) {
  return [speed, device_ids](const BenchOptions& o) -> Expected<BenchReport> {
    const std::string id = o.session.cuda_options.at("device_id");
    device_ids->push_back(id);
    auto it = speed.find(std::stoi(id));
    if (it == speed.end()) return Unavailable("CUDA error: out of memory");
    BenchReport r;
    r.results = {Result(1, 700 * it->second, 1.4 / it->second), Result(32, 7000 * it->second, 4.5 / it->second)};
    return r;
  };
}

const std::vector<std::pair<int, std::string>> kFourGpus = {
    {0, "NVIDIA H100 80GB HBM3"}, {1, "NVIDIA H100 80GB HBM3"}, {2, "NVIDIA H100 80GB HBM3"}, {3, "NVIDIA H100 80GB HBM3"}};

TEST(BenchDevices, EachGpuRunsWithItsOwnDeviceIdAndTheSlowOneIsNamed) {
  std::vector<std::string> ids;
  BenchOptions options;
  options.session.provider = Provider::kCuda;
  auto runs = RunOnDevices(options, kFourGpus, FakeBench({{0, 1.0}, {1, 1.02}, {2, 0.75}, {3, 1.0}}, &ids));
  EXPECT_EQ(ids, (std::vector<std::string>{"0", "1", "2", "3"}));
  DeviceComparison c = CompareDevices(runs);
  ASSERT_EQ(c.rows.size(), 4u);
  ASSERT_TRUE(c.fastest && c.slowest);
  EXPECT_EQ(c.rows[*c.fastest].gpu, 1);
  EXPECT_EQ(c.rows[*c.slowest].gpu, 2);
  EXPECT_NEAR(c.ratio, 0.75 / 1.02, 1e-9);
  EXPECT_EQ(c.rows[0].best_at, "io=bound batch 32");
  EXPECT_NEAR(*c.rows[0].p50_ms, 1.4, 1e-9);  // at the smallest batch, not the fastest one

  const std::string text = RenderDeviceComparison(c);
  EXPECT_THAT(text, HasSubstr("fastest: GPU 1 (NVIDIA H100 80GB HBM3), 7140.0 items/s"));
  EXPECT_THAT(text, HasSubstr("slowest: GPU 2 (NVIDIA H100 80GB HBM3), 5250.0 items/s, 0.74x the fastest"));
  EXPECT_THAT(text, HasSubstr("GPU 2 runs 26% slower than GPU 1"));
  EXPECT_THAT(text, HasSubstr("ortgpu doctor --device 2"));
}

TEST(BenchDevices, GpusThatMeasureAlikeGetNoNote) {
  std::vector<std::string> ids;
  auto runs = RunOnDevices({}, {{0, "A"}, {1, "A"}}, FakeBench({{0, 1.0}, {1, 0.97}}, &ids));
  const std::string text = RenderDeviceComparison(CompareDevices(runs));
  EXPECT_THAT(text, HasSubstr("0.97x the fastest"));
  EXPECT_THAT(text, Not(HasSubstr("note:")));
}

// A GPU that fails (out of memory, lost) is reported; the others still run
// and are compared.
TEST(BenchDevices, AFailingGpuIsReportedAndTheOthersCompared) {
  std::vector<std::string> ids;
  auto runs = RunOnDevices({}, kFourGpus, FakeBench({{0, 1.0}, {1, 1.0}, {3, 0.5}}, &ids));
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_FALSE(runs[2].error.ok());
  DeviceComparison c = CompareDevices(runs);
  EXPECT_EQ(c.rows[2].error, "CUDA error: out of memory");
  EXPECT_EQ(c.rows[*c.slowest].gpu, 3);
  EXPECT_THAT(RenderDeviceComparison(c),
              ::testing::ContainsRegex("GPU 2 \\(NVIDIA H100 80GB HBM3\\) +not measured: CUDA error: out of memory"));

  auto json = nlohmann::json::parse(RenderDevicesJson(c, runs));
  EXPECT_EQ(json["fastest"], 0);
  EXPECT_EQ(json["slowest"], 3);
  EXPECT_EQ(json["devices"][2]["error"], "CUDA error: out of memory");
  EXPECT_TRUE(json["devices"][2]["report"].is_null());
  EXPECT_TRUE(json["devices"][0]["report"].contains("results"));
}

TEST(BenchDevices, OneGpuHasNothingToCompare) {
  std::vector<std::string> ids;
  auto runs = RunOnDevices({}, {{0, "NVIDIA H200"}}, FakeBench({{0, 1.0}}, &ids));
  DeviceComparison c = CompareDevices(runs);
  EXPECT_FALSE(c.fastest);
  EXPECT_EQ(c.ratio, 0);
  EXPECT_THAT(RenderDeviceComparison(c), HasSubstr("fewer than two GPUs measured"));
}

}  // namespace
}  // namespace ortgpu::bench
