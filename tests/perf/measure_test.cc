// The stability rules of `ortgpu perf` on hand-made windows: no server, no clock.
#include "perf/measure.h"

#include <gtest/gtest.h>

namespace ortgpu::perf {
namespace {

// A window of `n` successes of `latency_ms` each over one second.
Window MakeWindow(int n, double latency_ms) {
  Window w;
  w.duration_s = 1.0;
  w.latencies_ms.assign(static_cast<size_t>(n), latency_ms);
  return w;
}

MeasureOptions Options() {
  MeasureOptions o;
  o.window_ms = 1000;
  o.max_trials = 6;
  return o;
}

std::function<Expected<Window>()> Source(std::vector<Window> windows, int* calls) {
  return [windows = std::move(windows), calls]() -> Expected<Window> {
    const size_t i = static_cast<size_t>((*calls)++);
    return windows.at(i);
  };
}

TEST(IsStable, NeedsThreeWindowsWithinTenPercentOfTheirMean) {
  const MeasureOptions o = Options();
  EXPECT_FALSE(IsStable({{100, 1.0}, {100, 1.0}}, o));
  EXPECT_TRUE(IsStable({{100, 1.0}, {105, 1.05}, {95, 0.95}}, o));
  // Throughput 130 is 15% off the mean of 100, 100, 130 (110): not stable.
  EXPECT_FALSE(IsStable({{100, 1.0}, {100, 1.0}, {130, 1.0}}, o));
  // Latency off by as much: not stable either.
  EXPECT_FALSE(IsStable({{100, 1.0}, {100, 1.0}, {100, 1.4}}, o));
  // Only the last three count.
  EXPECT_TRUE(IsStable({{10, 9.0}, {100, 1.0}, {101, 1.0}, {99, 1.0}}, o));
  // A window with no success is never stable.
  EXPECT_FALSE(IsStable({{0, 0}, {0, 0}, {0, 0}}, o));
}

TEST(IsStable, StabilityPercentageWidensTheBand) {
  MeasureOptions o = Options();
  o.stability = 0.25;
  EXPECT_TRUE(IsStable({{100, 1.0}, {100, 1.0}, {130, 1.0}}, o));
}

TEST(MeasureStep, StopsAtTheFirstStableTripleAndMergesIt) {
  int calls = 0;
  auto m = MeasureStep(Options(), Source({MakeWindow(10, 5.0), MakeWindow(100, 1.0), MakeWindow(102, 1.0), MakeWindow(98, 1.0),
                                          MakeWindow(1, 1.0)},
                                         &calls));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(calls, 4);
  EXPECT_TRUE(m->stable);
  EXPECT_EQ(m->windows.size(), 4u);
  EXPECT_EQ(m->merged.latencies_ms.size(), 300u);  // the ramp-up window is left out
  EXPECT_DOUBLE_EQ(m->merged.duration_s, 3.0);
  EXPECT_TRUE(m->note.empty());
}

TEST(MeasureStep, ReportsUnstableAfterMaxTrialsFromTheLastThree) {
  int calls = 0;
  std::vector<Window> windows;
  for (int i = 0; i < 6; ++i) windows.push_back(MakeWindow(i % 2 ? 100 : 200, 1.0));
  auto m = MeasureStep(Options(), Source(windows, &calls));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(calls, 6);
  EXPECT_FALSE(m->stable);
  EXPECT_EQ(m->merged.latencies_ms.size(), 400u);  // 100 + 200 + 100
  EXPECT_NE(m->note.find("never became stable"), std::string::npos) << m->note;
}

TEST(MeasureStep, AWindowOfOnlyFailuresEndsTheStep) {
  Window failed;
  failed.duration_s = 1;
  failed.errors["500"] = 7;
  int calls = 0;
  auto m = MeasureStep(Options(), Source({MakeWindow(100, 1.0), failed, MakeWindow(100, 1.0)}, &calls));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(m->all_failed);
  EXPECT_EQ(m->merged.errors.at("500"), 7);
  EXPECT_NE(m->note.find("HTTP 500 x 7"), std::string::npos) << m->note;
}

TEST(MeasureStep, ServerCountersAddUpOverTheCountedWindows) {
  std::vector<Window> windows;
  for (int i = 0; i < 3; ++i) {
    Window w = MakeWindow(100, 1.0);
    InferenceCounters c;
    c.success = {100, 100'000'000};
    c.queue = {100, 10'000'000};
    w.server = c;
    windows.push_back(w);
  }
  int calls = 0;
  auto m = MeasureStep(Options(), Source(windows, &calls));
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m->merged.server.has_value());
  EXPECT_EQ(m->merged.server->success.count, 300);
  EXPECT_EQ(m->merged.server->queue.ns, 30'000'000);
}

TEST(DescribeErrors, NamesHttpCodesAndOtherFailures) {
  EXPECT_EQ(DescribeErrors({{"500", 3}, {"timeout", 2}}), "HTTP 500 x 3, timeout x 2");
}

}  // namespace
}  // namespace ortgpu::perf
