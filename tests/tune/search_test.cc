#include "tune/search.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"
#include "fakes/fake_measurer.h"
#include "support/tune_space.h"

namespace ortgpu::tune {
namespace {

using ortgpu::testing::FakeClock;
using ortgpu::testing::FakeMeasurer;
using ortgpu::testing::LatencyMs;
using ortgpu::testing::Resnet;
using ortgpu::testing::SmallSpace;

Expected<Measurement> ScriptedInProcess(const EngineChoice& e, int64_t batch) {
  return Measurement{LatencyMs(e, batch), static_cast<double>(batch) * 1000.0 / LatencyMs(e, batch)};
}

// Served: one instance reaches 80% of its batch's in-process speed, two
// overlap their batches and reach 95% (as on the H200), so the best is batch
// 32 on two instances with graphs and NHWC.
Expected<Measurement> ScriptedServed(const ServedCandidate& c, double budget) {
  const double stream = static_cast<double>(c.batch) * 1000.0 / LatencyMs(c.engine, c.batch);
  return Measurement{budget / 2, stream * (c.instances == 1 ? 0.8 : 0.95)};
}

std::string TempPath() {
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("tune_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / "history.jsonl").string();
}

TEST(Search, InProcessFirstThenServedBestFirstThenRepeats) {
  FakeMeasurer m;
  m.SetInProcess(ScriptedInProcess);
  m.SetServed(ScriptedServed);
  History h;
  FakeClock clock;
  auto r = RunSearch(Resnet(), SmallSpace(), {.latency_budget_ms = 20}, m, h, clock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // 4 engine choices x 3 batches in-process.
  EXPECT_EQ(m.in_process_calls.size(), 12u);
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_EQ(r->winner->batch, 32);
  EXPECT_TRUE(r->winner->engine.cuda_graphs);
  EXPECT_TRUE(r->winner->engine.prefer_nhwc);
  EXPECT_EQ(r->winner->instances, 2);
  // The leaders have their repeats.
  ASSERT_FALSE(r->leaders.empty());
  for (const Contender& c : r->leaders) EXPECT_EQ(c.goodputs.size(), 3u);
  // The first served has the highest ceiling.
  ASSERT_FALSE(m.served_calls.empty());
  EXPECT_EQ(m.served_calls.front().batch, 32);
}

TEST(Search, PrunedCandidatesAreNeverServed) {
  FakeMeasurer m;
  // Batch 32 takes 30 ms in-process: over a 20 ms budget.
  m.SetInProcess([](const EngineChoice&, int64_t batch) -> Expected<Measurement> {
    const double ms = batch == 32 ? 30.0 : 1.0 + batch * 0.5;
    return Measurement{ms, batch * 1000.0 / ms};
  });
  m.SetServed(ScriptedServed);
  History h;
  FakeClock clock;
  auto r = RunSearch(Resnet(), SmallSpace(), {.latency_budget_ms = 20}, m, h, clock);
  ASSERT_TRUE(r.ok());
  for (const ServedCandidate& c : m.served_calls) EXPECT_NE(c.batch, 32) << c.Key();
  EXPECT_TRUE(std::any_of(r->rejected.begin(), r->rejected.end(), [](const Rejected& x) {
    return x.candidate.find("batch=32") != std::string::npos && x.reason.find("exceeds the 20.000 ms budget") != std::string::npos;
  }));
  // Once batch 8 on two instances was served, batch 1 cannot catch up.
  for (const ServedCandidate& c : m.served_calls) EXPECT_NE(c.batch, 1) << c.Key();
}

TEST(Search, GraphsAreNeverMeasuredForAVariableSequenceDim) {
  FakeMeasurer m;
  ModelTraits bert = Resnet();
  bert.variable_non_batch_dim = true;
  History h;
  FakeClock clock;
  auto r = RunSearch(bert, SmallSpace(), {}, m, h, clock);
  ASSERT_TRUE(r.ok());
  for (const std::string& k : m.in_process_calls) EXPECT_EQ(k.find("graphs=1"), std::string::npos) << k;
  for (const ServedCandidate& c : m.served_calls) EXPECT_FALSE(c.engine.cuda_graphs);
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_FALSE(r->winner->engine.cuda_graphs);
}

TEST(Search, AFailedCaptureFallsBackAndSaysSo) {
  FakeMeasurer m;
  m.SetInProcess([](const EngineChoice& e, int64_t batch) -> Expected<Measurement> {
    if (e.cuda_graphs && batch == 32) return Internal("ORT refused to capture a CUDA graph at batch 32");
    return Measurement{1.0 + batch * 0.25, 0};
  });
  m.SetServed(ScriptedServed);
  History h;
  FakeClock clock;
  auto r = RunSearch(Resnet(), SmallSpace(), {}, m, h, clock);
  ASSERT_TRUE(r.ok());
  for (const ServedCandidate& c : m.served_calls) EXPECT_FALSE(c.engine.cuda_graphs && c.batch == 32) << c.Key();
  EXPECT_TRUE(std::any_of(r->rejected.begin(), r->rejected.end(), [](const Rejected& x) {
    return x.reason.find("refused to capture") != std::string::npos;
  }));
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_FALSE(r->winner->engine.cuda_graphs && r->winner->batch == 32);
}

TEST(Search, ResumeSkipsWhatWasMeasured) {
  const std::string path = TempPath();
  FakeMeasurer first;
  first.SetServed(ScriptedServed);
  FakeClock clock;
  std::optional<ServedCandidate> winner;
  {
    auto h = History::Open(path, nullptr);
    ASSERT_TRUE(h.ok());
    auto r = RunSearch(Resnet(), SmallSpace(), {}, first, *h, clock);
    ASSERT_TRUE(r.ok());
    winner = r->winner;
  }
  FakeMeasurer second;
  second.SetServed(ScriptedServed);
  auto h = History::Open(path, nullptr);
  ASSERT_TRUE(h.ok());
  auto r = RunSearch(Resnet(), SmallSpace(), {}, second, *h, clock);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(second.in_process_calls.empty());
  EXPECT_TRUE(second.served_calls.empty());
  EXPECT_EQ(r->evaluations, 0);
  EXPECT_EQ(r->reused, static_cast<int>(first.in_process_calls.size() + first.served_calls.size()));
  EXPECT_EQ(r->winner, winner);
}

TEST(Search, ResumeSurvivesATruncatedLastLine) {
  const std::string path = TempPath();
  FakeMeasurer first;
  first.SetServed(ScriptedServed);
  FakeClock clock;
  {
    auto h = History::Open(path, nullptr);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(RunSearch(Resnet(), SmallSpace(), {}, first, *h, clock).ok());
  }
  // Killed mid-write: the last line loses its end.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  std::vector<std::string> warnings;
  auto h = History::Open(path, &warnings);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(warnings.size(), 1u);
  FakeMeasurer second;
  second.SetServed(ScriptedServed);
  auto r = RunSearch(Resnet(), SmallSpace(), {}, second, *h, clock);
  ASSERT_TRUE(r.ok());
  // Only the lost measurement is taken again: the last repeat of the last leader.
  EXPECT_TRUE(second.in_process_calls.empty());
  EXPECT_EQ(second.served_calls.size(), 1u);
  EXPECT_EQ(r->evaluations, 1);
  // And the history is whole again.
  std::vector<std::string> again;
  ASSERT_TRUE(History::Open(path, &again).ok());
  EXPECT_TRUE(again.empty());
}

TEST(Search, EvaluationLimitStopsAndDecidesOnWhatItHas) {
  FakeMeasurer m;
  m.SetServed(ScriptedServed);
  History h;
  FakeClock clock;
  auto r = RunSearch(Resnet(), SmallSpace(), {.max_evaluations = 14}, m, h, clock);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->evaluations, 14);
  EXPECT_EQ(m.served_calls.size(), 2u);
  EXPECT_TRUE(r->stopped_early);
  EXPECT_TRUE(r->winner.has_value());
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("limit of 14 measurements"), std::string::npos);
}

TEST(Search, WallTimeLimitThroughTheClock) {
  FakeMeasurer m;
  FakeClock clock;
  m.AdvanceClockPerMeasurement(&clock, 1'000'000'000);  // each measurement takes 1 s
  History h;
  auto r = RunSearch(Resnet(), SmallSpace(), {.max_wall_ns = 5'000'000'000}, m, h, clock);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->evaluations, 5);
  EXPECT_TRUE(r->stopped_early);
  EXPECT_NE(r->notes[0].find("time limit of 5 s"), std::string::npos) << r->notes[0];
}

TEST(Search, NothingWithinTheBudgetIsSaid) {
  FakeMeasurer m;
  m.SetInProcess([](const EngineChoice&, int64_t batch) -> Expected<Measurement> { return Measurement{50.0, 0}; });
  History h;
  FakeClock clock;
  auto r = RunSearch(Resnet(), SmallSpace(), {.latency_budget_ms = 20}, m, h, clock);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->winner.has_value());
  EXPECT_TRUE(m.served_calls.empty());
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.back().find("no served candidate met the 20 ms latency budget"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::tune
