// doctor --html: the page a user attaches to a ticket, drawn in headless
// Chromium as bench's report is (issue 13).
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "doctor/checks_health.h"
#include "doctor/render.h"
#include "fakes/fake_gpu_driver.h"
#include "fakes/fake_nvml.h"
#include "support/headless_chromium.h"

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;

// An H200 report: health findings with the copy test, a placement for the
// built-in model and one model, and a hostile string.
Report H200Report() {
  Report r;
  Finding os = MakeFinding("host.os", Layer::kHost, Verdict::kInfo, "Ubuntu 24.04 <script>alert(1)</script>");
  r.Add(os);
  HealthObservation h;
  h.health = ortgpu::testing::FakeNvml::HealthyH200();
  h.memory_total = 141ull << 30;
  h.load_samples = {ortgpu::testing::FakeNvml::FullClock()};
  h.copies = ortgpu::testing::FakeGpuDriver::H200Copies();
  CheckHealth(h, r);
  Finding e2e = MakeFinding("e2e.placement", Layer::kEndToEnd, Verdict::kPass, "every compute node on CUDA", true);
  e2e.facts = {{"nodes.CUDAExecutionProvider", "4"}, {"nodes.CPUExecutionProvider", "0"}};
  r.Add(e2e);
  Finding model = MakeFinding("model.1.placement", Layer::kModel, Verdict::kFail, "a Conv fell back to the CPU", true);
  model.facts = {{"nodes.CUDAExecutionProvider", "120"}, {"nodes.CPUExecutionProvider", "3"}};
  model.why = "the CPU node costs two copies per run";
  model.fix = "export the model with opset 17";
  r.Add(model);
  return r;
}

const nlohmann::json kHeader = {{"ortgpu_version", "0.1.0"}, {"ort_version", "1.29.0"}, {"models", {"/m/a.onnx"}}};

TEST(RenderHtml, PageHasEveryLayerFindingAndFixEscaped) {
  const std::string html = RenderHtml(H200Report(), false, kHeader);
  EXPECT_THAT(html, HasSubstr("<title>ortgpu doctor</title>"));
  EXPECT_THAT(html, HasSubstr("2b GPU health and host-device path"));
  EXPECT_THAT(html, HasSubstr("health.copy_pageable"));
  EXPECT_THAT(html, HasSubstr("export the model with opset 17"));
  EXPECT_THAT(html, HasSubstr("NOT READY: a Conv fell back to the CPU"));
  EXPECT_THAT(html, HasSubstr("1.29.0"));
  EXPECT_EQ(html.find("<script>alert(1)"), std::string::npos);
  EXPECT_THAT(html, HasSubstr("Ubuntu 24.04 &lt;script&gt;"));
}

TEST(RenderHtml, ChromiumDrawsThePlacementAndBandwidthCharts) {
  if (!ortgpu::testing::HaveChromium()) GTEST_SKIP() << "chromium is not installed";
  const char* shot = std::getenv("ORTGPU_SCREENSHOT");  // also save what a reader sees
  const ortgpu::testing::RenderedPage page =
      ortgpu::testing::RenderInChromium(RenderHtml(H200Report(), false, kHeader), shot ? shot : "");
  ASSERT_TRUE(page.ran) << page.command;
  EXPECT_EQ(page.charts_drawn, 2) << page.chart_errors;
  EXPECT_EQ(page.chart_errors, "");
  EXPECT_THAT(page.dom, HasSubstr("data-chart=\"placement\""));
  EXPECT_THAT(page.dom, HasSubstr("data-chart=\"bandwidth\""));
}

// Seen on the H200: with an EP that ran nodes of only some runs, the bars
// came out of run order ("model 2, built-in check model, model 1"). Every
// EP now lists every run, in report order, with 0 where it ran nothing; and
// a run of one model on one EP (one bar) is drawn, not left out.
TEST(RenderHtml, PlacementBarsFollowTheRunsInOrder) {
  Report r;
  Finding e2e = MakeFinding("e2e.placement", Layer::kEndToEnd, Verdict::kPass, "every node on CUDA", true);
  e2e.facts = {{"nodes.CUDAExecutionProvider", "9"}};
  r.Add(e2e);
  Finding m1 = MakeFinding("model.1.placement", Layer::kModel, Verdict::kPass, "every node on CUDA", true);
  m1.facts = {{"nodes.CUDAExecutionProvider", "122"}};
  r.Add(m1);
  Finding m2 = MakeFinding("model.2.placement", Layer::kModel, Verdict::kPass, "compute on CUDA", true);
  m2.facts = {{"nodes.CUDAExecutionProvider", "407"}, {"nodes.CPUExecutionProvider", "82"}};
  r.Add(m2);
  const std::string html = RenderHtml(r, false, kHeader);
  const size_t check = html.find("built-in check model");
  const size_t one = html.find("model 1");
  const size_t two = html.find("model 2");
  ASSERT_NE(check, std::string::npos);
  EXPECT_LT(check, one);
  EXPECT_LT(one, two);
  EXPECT_EQ(html.find("is left out"), std::string::npos);

  Report single;
  single.Add(e2e);
  EXPECT_EQ(RenderHtml(single, false, kHeader).find("is left out"), std::string::npos);
}

TEST(RenderHtml, CpuOnlyReportHasNoChartsAndNoChartJs) {
  Report r;
  r.Add(MakeFinding("host.os", Layer::kHost, Verdict::kInfo, "Debian 12"));
  const std::string html = RenderHtml(r, false, kHeader);
  EXPECT_EQ(html.find("Chart.js"), std::string::npos);
  EXPECT_THAT(html, HasSubstr("Debian 12"));
}

}  // namespace
}  // namespace ortgpu::doctor
