#include "doctor/devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;

// What doctor reports for one GPU: the end-to-end CUDA run and the copy test.
DeviceReport Gpu(int gpu, double median_ms, double h2d_gbps, Verdict e2e = Verdict::kPass) {
  DeviceReport d;
  d.gpu = gpu;
  d.name = "NVIDIA H100 80GB HBM3";
  Finding cuda = MakeFinding("e2e.cuda", Layer::kEndToEnd, e2e, e2e == Verdict::kPass ? "runs on CUDA" : "the CUDA run failed", true);
  if (e2e == Verdict::kPass) cuda.facts["median_ms"] = std::to_string(median_ms);
  d.report.Add(std::move(cuda));
  Finding copy = MakeFinding("health.copy", Layer::kHealth, Verdict::kPass, "copies at the link's speed", true);
  copy.facts["pinned_h2d_gbps"] = std::to_string(h2d_gbps);
  d.report.Add(std::move(copy));
  return d;
}

TEST(DoctorDevices, FourGpusSideBySideTheSlowAndTheFarOneNamed) {
  std::vector<DeviceReport> reports = {Gpu(0, 0.100, 55.0), Gpu(1, 0.098, 54.0), Gpu(2, 0.160, 53.0),
                                       Gpu(3, 0.101, 26.0)};
  DeviceSummary s = SummarizeDevices(reports, /*require_gpu=*/false);
  ASSERT_TRUE(s.fastest && s.slowest);
  EXPECT_EQ(s.rows[*s.fastest].gpu, 1);
  EXPECT_EQ(s.rows[*s.slowest].gpu, 2);
  ASSERT_EQ(s.notes.size(), 2u);
  EXPECT_THAT(s.notes[0], HasSubstr("GPU 2 takes 1.63x GPU 1's time"));
  EXPECT_THAT(s.notes[1], HasSubstr("GPU 3 copies from the host at 26.0 GB/s against 55.0"));
  const std::string text = RenderDeviceSummary(s);
  EXPECT_THAT(text, HasSubstr("fastest: GPU 1 (NVIDIA H100 80GB HBM3), 0.098 ms; slowest: GPU 2"));
  EXPECT_EQ(DevicesExitCode(s), 0);
}

// One GPU whose CUDA run failed: its verdict fails the whole run, and it is
// left out of fastest and slowest.
TEST(DoctorDevices, AFailingGpuFailsTheRunAndIsNotRanked) {
  std::vector<DeviceReport> reports = {Gpu(0, 0.1, 55.0), Gpu(1, 0, 55.0, Verdict::kFail), Gpu(2, 0.11, 55.0)};
  DeviceSummary s = SummarizeDevices(reports, false);
  EXPECT_EQ(DevicesExitCode(s), 1);
  EXPECT_FALSE(s.rows[1].median_ms);
  EXPECT_EQ(s.rows[*s.slowest].gpu, 2);
  EXPECT_THAT(s.rows[1].summary, HasSubstr("NOT READY: the CUDA run failed [e2e.cuda]"));
  EXPECT_TRUE(s.notes.empty());

  nlohmann::json j = RenderDevicesJson(reports, s, false, {{"ortgpu_version", "0.1.0"}});
  EXPECT_EQ(j["ortgpu_version"], "0.1.0");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["devices"].size(), 3u);
  EXPECT_EQ(j["devices"][1]["exit_code"], 1);
  EXPECT_TRUE(j["devices"][1]["median_ms"].is_null());
  EXPECT_EQ(j["fastest"], 0);
}

TEST(DoctorDevices, OneGpuIsNotRanked) {
  DeviceSummary s = SummarizeDevices({Gpu(0, 0.1, 55.0)}, false);
  EXPECT_FALSE(s.fastest);
  EXPECT_THAT(RenderDeviceSummary(s), ::testing::Not(HasSubstr("fastest")));
}

}  // namespace
}  // namespace ortgpu::doctor
