#include "bench/memory_report.h"

#include <gtest/gtest.h>

#include "bench/report.h"

namespace ortgpu::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A CUDA run as NVML and the arenas would have reported it: one session
// whose arena holds 100 MiB of weights plus 10 MiB a row, 600 MiB outside
// the arena (context, cuDNN, cuBLAS), batch 8 measured 1% high.
BenchReport FakeCudaReport() {
  BenchReport report;
  report.provider = Provider::kCuda;
  for (int64_t batch : {1, 8, 32}) {
    ConfigResult r;
    r.config.variant.name = "default";
    r.config.provider = Provider::kCuda;
    r.config.batch = batch;
    const double arena = (100 + 10 * batch) * kMiB;
    const double measured = (600 + 100 + 10 * batch) * kMiB * (batch == 8 ? 1.01 : 1.0);
    r.gpu_memory_mb = measured / kMiB;
    r.gpu_memory_source = "process";
    ArenaUse use;
    use.sessions = 1;
    use.weights = static_cast<uint64_t>(100 * kMiB);
    use.reserved = use.first_reserved = static_cast<uint64_t>(arena);
    use.in_use = use.weights;
    r.arena = use;
    report.results.push_back(r);
  }
  return report;
}

TEST(MemoryReportTest, FitsTheArenaPredictsThePeakAndReportsTheErrorAtTheMiddleSize) {
  auto tables = BuildMemoryTables(FakeCudaReport());
  ASSERT_EQ(tables.size(), 1u);
  const MemoryTable& t = tables[0];
  EXPECT_TRUE(t.device);
  EXPECT_EQ(t.source, "process");
  ASSERT_TRUE(t.fit.has_value());
  EXPECT_NEAR(t.fit->per_row_bytes, 10 * kMiB, 1);
  EXPECT_NEAR(t.fit->fixed_bytes, 100 * kMiB, 1);
  EXPECT_NEAR(static_cast<double>(t.other), 600 * kMiB, 1);
  EXPECT_EQ(t.weights, static_cast<uint64_t>(100 * kMiB));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_NEAR(static_cast<double>(*t.rows[1].predicted), 780 * kMiB, 1);
  ASSERT_TRUE(t.rows[1].error.has_value());
  EXPECT_NEAR(*t.rows[1].error, 1 / 1.01 - 1, 1e-6);
  EXPECT_NEAR(*t.rows[2].error, 0, 1e-6);
  // The profile serve would plan with predicts two instances: other once.
  const MemoryProfile p = t.Profile();
  EXPECT_EQ(p.measured_shape.session_rows, (std::vector<int64_t>{32}));
  EXPECT_NEAR(static_cast<double>(PredictPeak(p, {{32}, 2})), (600 + 2 * 420) * kMiB, 2);
}

TEST(MemoryReportTest, TheTableJsonAndHtmlShowMeasuredPredictedAndTheFit) {
  BenchReport report = FakeCudaReport();
  report.memory = BuildMemoryTables(report);
  const std::string text = RenderTable(report);
  EXPECT_NE(text.find("memory of default: device memory (NVML, process)"), std::string::npos) << text;
  EXPECT_NE(text.find("predicted"), std::string::npos);
  EXPECT_NE(text.find("-1.0%"), std::string::npos) << "batch 8's error" << text;
  EXPECT_NE(text.find("fit: one session's arena = 100.0 MiB + 10.0 MiB per row (through batch 1 and 32; batch 8 off by"),
            std::string::npos)
      << text;
  auto json = nlohmann::json::parse(RenderJson(report));
  ASSERT_TRUE(json.contains("memory"));
  EXPECT_EQ(json["memory"][0]["rows"].size(), 3u);
  EXPECT_EQ(json["memory"][0]["fit"]["check_batch"], 8);
  EXPECT_TRUE(json["memory"][0]["profile"].is_object());
  const std::string html = RenderHtml(report);
  EXPECT_NE(html.find("data-chart=\"memory-0\""), std::string::npos);
  EXPECT_NE(html.find("arena reserved"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::bench
