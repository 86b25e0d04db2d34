#include "tune/search.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"
#include "fakes/fake_measurer.h"
#include "support/tune_space.h"
#include "tune/h200_scenario.h"

namespace ortgpu::tune {
namespace {

using ortgpu::testing::FakeClock;
using ortgpu::testing::FakeMeasurer;
using testing::H200InProcess;
using testing::H200Served;
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

// The search with a history of its own and a clock that never moves.
Expected<SearchResult> Search(Measurer& m, const ModelTraits& traits, const SpaceOptions& space,
                              const SearchOptions& options) {
  History h;
  FakeClock clock;
  return RunSearch(traits, space, options, m, h, clock);
}

bool Mentions(const std::vector<Rejected>& list, const std::string& what, const std::string& why) {
  return std::any_of(list.begin(), list.end(), [&](const Rejected& r) {
    return r.candidate.find(what) != std::string::npos && r.reason.find(why) != std::string::npos;
  });
}

TEST(Search, ScreenedEngineThenCurveThenServedThenRepeats) {
  FakeMeasurer m;
  m.SetInProcess(ScriptedInProcess);
  m.SetServed(ScriptedServed);
  auto r = Search(m, Resnet(), SmallSpace(), {.latency_budget_ms = 20});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Screening at 32: the default, NHWC (kept), then graphs (kept); a second
  // pass flips NHWC back (slower); then the curve of the screened choice and
  // of its fallback without graphs, one session each, for batches 1 and 8.
  ASSERT_TRUE(r->screened.has_value());
  EXPECT_TRUE(r->screened->cuda_graphs);
  EXPECT_TRUE(r->screened->prefer_nhwc);
  ASSERT_EQ(r->curve_engines.size(), 2u);
  EXPECT_FALSE(r->curve_engines[1].cuda_graphs);
  EXPECT_EQ(m.in_process_calls.size(), 4u + 4u);
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_EQ(r->winner->batch, 32);
  EXPECT_TRUE(r->winner->engine.cuda_graphs);
  EXPECT_TRUE(r->winner->engine.prefer_nhwc);
  EXPECT_EQ(r->winner->instances, 2);
  // The leaders have their repeats.
  ASSERT_FALSE(r->leaders.empty());
  for (const Contender& c : r->leaders) EXPECT_EQ(c.goodputs.size(), 3u);
  // The first served has (within 5%) the highest prediction, padded with graphs.
  ASSERT_FALSE(r->served.empty());
  double top = 0;
  for (const ServedOutcome& o : r->served) top = std::max(top, o.predicted);
  EXPECT_GE(r->served.front().predicted, 0.95 * top);
  EXPECT_TRUE(r->served.front().candidate.engine.cuda_graphs);
  EXPECT_TRUE(r->served.front().candidate.pad_to_preferred);
}

// The H200's figures: the search finds fp16 + NHWC + the conv+bias fusion +
// CUDA graphs by flipping one knob at a time, and says why the fusion
// failed on fp16 NCHW.
TEST(Search, ScreeningFindsTheH200sEngineOneKnobAtATime) {
  FakeMeasurer m;
  m.SetInProcess(H200InProcess);
  m.SetServed(H200Served);
  History h;
  FakeClock clock;
  SpaceOptions space;
  space.adaptive_padding = {false};
  auto r = RunSearch(Resnet(128), space, {.latency_budget_ms = 20}, m, h, clock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->screened.has_value());
  EXPECT_EQ(r->screened->Key(), "fp16 nhwc=1 graphs=1 conv=EXHAUSTIVE fuse=1");
  // fp16 was judged once; mixed is not judged when fp16 is within the budget.
  EXPECT_EQ(m.judged, std::vector<Precision>{Precision::kFp16});
  EXPECT_TRUE(Mentions(r->rejected, "precision mixed", "fp16 is within the accuracy budget"));
  // Screening measured 7 choices at batch 32, then again only the close call
  // (the algorithm search, with graphs): 8, not 128 points.
  int at_32 = 0;
  for (const std::string& k : m.in_process_calls) at_32 += k.find("batch=32") != std::string::npos;
  EXPECT_EQ(at_32, 8);
  // The search never measured the whole product.
  EXPECT_LT(m.in_process_calls.size(), 25u);
  // HEURISTIC is no faster than EXHAUSTIVE: not kept, within the noise.
  EXPECT_TRUE(std::any_of(r->screening.begin(), r->screening.end(), [](const ScreenStep& s) {
    return s.knob == Knob::kConvSearch && !s.kept && s.note.find("within the noise") != std::string::npos;
  }));
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_EQ(r->winner->engine, *r->screened);
  EXPECT_TRUE(r->winner->pad_to_preferred);
  EXPECT_FALSE(r->winner->adaptive_padding);
  // Two batches of 32 in flight on one instance: 64 connections fill them;
  // on two instances x two workers they split into padded 16-row batches.
  EXPECT_EQ(r->winner->batch, 32) << r->winner->Key();
  EXPECT_EQ(r->winner->instances, 1) << r->winner->Key();
}

// A candidate that may lead takes its repeats on its own server start (no
// second load); one far below the best so far takes one search only, and
// the leaders' repeats then need no restart.
TEST(Search, RepeatsRunOnTheFirstStartOfALikelyLeader) {
  FakeMeasurer m;
  m.SetInProcess(ScriptedInProcess);
  m.SetServed(ScriptedServed);
  m.RepeatOnStart(true);
  History h;
  FakeClock clock;
  auto r = RunSearch(Resnet(), SmallSpace(), {.latency_budget_ms = 20}, m, h, clock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->winner.has_value());
  // One start per candidate: no candidate was served twice.
  std::set<std::string> keys;
  for (const ServedCandidate& c : m.served_calls) EXPECT_TRUE(keys.insert(c.Key()).second) << c.Key();
  // The first served asked for every repeat, with no threshold; later ones
  // with 90% of the best so far.
  ASSERT_FALSE(m.served_loads.empty());
  EXPECT_EQ(m.served_loads.front().searches, 3);
  EXPECT_EQ(m.served_loads.front().again_above, 0);
  EXPECT_GT(m.served_loads.back().again_above, 0);
  // The leaders have three figures each, kept in the history as repeats.
  ASSERT_FALSE(r->leaders.empty());
  for (const Contender& c : r->leaders) {
    EXPECT_EQ(c.goodputs.size(), 3u);
    const std::string key = ServedKey(c.candidate, 20);
    EXPECT_NE(h.Find(key, 1), nullptr);
    EXPECT_NE(h.Find(key, 2), nullptr);
  }
}

// With the option off, every leader's repeat restarts the server.
TEST(Search, RepeatsRestartTheServerWhenTheOptionIsOff) {
  FakeMeasurer m;
  m.SetInProcess(ScriptedInProcess);
  m.SetServed(ScriptedServed);
  m.RepeatOnStart(true);
  SearchOptions options{.latency_budget_ms = 20};
  options.repeat_on_start_ratio = 0;
  auto r = Search(m, Resnet(), SmallSpace(), options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const ServedLoad& l : m.served_loads) EXPECT_EQ(l.searches, 1);
  // Each leader served three times: one start per figure.
  std::map<std::string, int> starts;
  for (const ServedCandidate& c : m.served_calls) ++starts[c.Key()];
  ASSERT_FALSE(r->leaders.empty());
  for (const Contender& c : r->leaders) EXPECT_EQ(starts[c.candidate.Key()], 3) << c.candidate.Key();
}

// Where NHWC gains nothing, the fusion is tried on fp16 NCHW, fails with
// cuDNN's message, and the search goes on without it.
TEST(Search, AFlipThatFailsIsRejectedWithOrtsReason) {
  FakeMeasurer m;
  m.SetInProcess([](const EngineChoice& e, int64_t batch) {
    EngineChoice nchw = e;
    if (!e.fuse_conv_bias) nchw.prefer_nhwc = false;  // NHWC changes nothing, the fusion still needs it
    return H200InProcess(nchw, batch);
  });
  m.SetServed(H200Served);
  auto r = Search(m, Resnet(128), SpaceOptions{}, {.latency_budget_ms = 20});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Mentions(r->rejected, "fp16 nhwc=0", "HEURISTIC_QUERY_FAILED"));
  EXPECT_TRUE(std::any_of(r->screening.begin(), r->screening.end(), [](const ScreenStep& s) {
    return s.knob == Knob::kFuseConvBias && s.to_ms == 0 && s.note.find("HEURISTIC_QUERY_FAILED") != std::string::npos;
  }));
  ASSERT_TRUE(r->screened.has_value());
  EXPECT_EQ(r->screened->Key(), "fp16 nhwc=0 graphs=1 conv=EXHAUSTIVE");
  EXPECT_TRUE(r->winner.has_value());
}

// Issue 28's targets against the H200 scenario, with the time each step
// took there: a session 3 s plus 0.5 s a batch (10 s more a batch with the
// fusion's plan building), a served first measurement 25 s of load search
// plus the load (2 s an instance, 11 s with the fusion), a repeat 12 s plus
// the load, the fp16 judgment 20 s. The search ends within its limit, and
// its winner serves at least 95% of the best of the whole space: in 10
// minutes, and in 4 (run q2: with 4 minutes the search served one
// candidate, 2 instances x 2 workers under GPU turns, 92.6% of the best).
void ExpectTheH200ScenarioWithin95PercentOfTheBest(int minutes) {
  SCOPED_TRACE(::testing::Message() << minutes << " minutes");
  FakeClock clock;
  class Timed : public Measurer {
   public:
    explicit Timed(FakeClock& clock) : clock_(clock) {}
    Expected<PrecisionVerdict> JudgePrecision(Precision) override {
      clock_.Advance(20'000'000'000);
      return PrecisionVerdict{.within_budget = true, .min_cosine = 0.99998};
    }
    std::vector<Expected<Measurement>> InProcess(const EngineChoice& e, const std::vector<int64_t>& batches) override {
      clock_.Advance(3'000'000'000);
      std::vector<Expected<Measurement>> out;
      for (int64_t b : batches) {
        clock_.Advance(e.fuse_conv_bias ? 10'500'000'000 : 500'000'000);
        out.push_back(H200InProcess(e, b));
      }
      return out;
    }
    Expected<Measurement> Served(const ServedCandidate& c, const ServedLoad& load) override {
      const int64_t per_instance = c.engine.fuse_conv_bias ? 11'000'000'000 : 2'000'000'000;
      clock_.Advance(c.instances * per_instance + (load.start_concurrency > 1 ? 12'000'000'000 : 25'000'000'000));
      Expected<Measurement> m = H200Served(c, load.latency_budget_ms);
      // The repeats on the same start: 12 s of load search each, no load.
      for (int i = 1; m.ok() && i < load.searches && m->items_per_s >= load.again_above; ++i) {
        clock_.Advance(12'000'000'000);
        m->again.push_back(*H200Served(c, load.latency_budget_ms));
      }
      return m;
    }

   private:
    FakeClock& clock_;
  } timed(clock);
  History h;
  SpaceOptions space;
  space.adaptive_padding = {false};
  SearchOptions options{.latency_budget_ms = 20, .max_wall_ns = int64_t{minutes} * 60'000'000'000};
  options.estimate.unpadded_factor = 0.5;
  auto r = RunSearch(Resnet(128), space, options, timed, h, clock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // A measurement started within the limit finishes; only the first served
  // candidate starts with nothing measured to say how long it takes (here
  // 22 s of loading, 25 s of load search and two 12 s repeats on its start).
  EXPECT_LE(r->wall_s, minutes * 60.0 + (r->served.size() == 1 ? 71.0 : 0.0));
  ASSERT_TRUE(r->winner.has_value());
  // The best of every valid served candidate on every engine choice.
  ModelTraits traits = Resnet(128);
  traits.precisions_within_budget = {Precision::kTf32, Precision::kFp32, Precision::kFp16, Precision::kMixed};
  const EngineSpace engines = BuildEngineSpace(traits, space);
  double best = 0;
  std::string best_key;
  for (const ServedCandidate& c : BuildServedCandidates(engines.choices, engines.batches, traits, space, nullptr)) {
    auto m = H200InProcess(c.engine, c.batch);
    if (!m.ok()) continue;
    const double g = H200Served(c, 20)->items_per_s;
    if (g > best) {
      best = g;
      best_key = c.Key();
    }
  }
  const double found = H200Served(*r->winner, 20)->items_per_s;
  EXPECT_GE(found, 0.95 * best) << r->winner->Key() << " against " << best_key;
}

TEST(Search, TheH200ScenarioFitsTenMinutesAndFindsWithin95PercentOfTheBest) {
  ExpectTheH200ScenarioWithin95PercentOfTheBest(10);
}

TEST(Search, TheH200ScenarioFindsWithin95PercentOfTheBestInFourMinutes) {
  ExpectTheH200ScenarioWithin95PercentOfTheBest(4);
}

TEST(Search, KnobsThatCannotMatterAreSkippedWithAReason) {
  FakeMeasurer m;
  ModelTraits mlp = Resnet();
  mlp.has_conv = false;
  History h;
  FakeClock clock;
  SpaceOptions space = SmallSpace();
  space.conv_searches = {ConvAlgoSearch::kExhaustive, ConvAlgoSearch::kHeuristic};
  space.fuse_conv_bias = {false, true};
  auto r = RunSearch(mlp, space, {}, m, h, clock);
  ASSERT_TRUE(r.ok());
  for (const std::string& k : m.in_process_calls) {
    EXPECT_EQ(k.find("nhwc=1"), std::string::npos) << k;
    EXPECT_EQ(k.find("fuse=1"), std::string::npos) << k;
    EXPECT_EQ(k.find("HEURISTIC"), std::string::npos) << k;
  }
  for (const char* knob : {"prefer_nhwc", "fuse_conv_bias", "conv_search"}) {
    EXPECT_TRUE(Mentions(r->rejected, knob, "no Conv node")) << knob;
  }
}

TEST(Search, OnlyPrecisionsWithinTheAccuracyBudgetAreScreenedAndMixedOnlyWhenFp16BreaksIt) {
  FakeMeasurer m;
  m.SetInProcess(H200InProcess);
  m.SetJudge([](Precision p) -> Expected<PrecisionVerdict> {
    if (p == Precision::kFp16) return PrecisionVerdict{.within_budget = false, .min_cosine = 0.97, .detail = "cosine 0.97"};
    return PrecisionVerdict{.within_budget = true, .min_cosine = 0.9995};
  });
  const std::string path = TempPath();
  FakeClock clock;
  {
    auto h = History::Open(path, nullptr);
    ASSERT_TRUE(h.ok());
    auto r = RunSearch(Resnet(), SmallSpace(), {.accuracy_tag = "cosine=0.999"}, m, *h, clock);
    ASSERT_TRUE(r.ok());
  }
  SpaceOptions space = SmallSpace();
  space.precisions = {Precision::kTf32, Precision::kFp16, Precision::kMixed};
  FakeMeasurer second;
  second.SetInProcess(H200InProcess);
  second.SetJudge([](Precision p) -> Expected<PrecisionVerdict> {
    if (p == Precision::kFp16) return PrecisionVerdict{.within_budget = false, .min_cosine = 0.97, .detail = "cosine 0.97"};
    return PrecisionVerdict{.within_budget = true, .min_cosine = 0.9995};
  });
  auto h = History::Open(path, nullptr);
  ASSERT_TRUE(h.ok());
  auto r = RunSearch(Resnet(), space, {.accuracy_tag = "cosine=0.999"}, second, *h, clock);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(second.judged, (std::vector<Precision>{Precision::kFp16, Precision::kMixed}));
  for (const std::string& k : second.in_process_calls) EXPECT_EQ(k.find("fp16"), std::string::npos) << k;
  EXPECT_TRUE(Mentions(r->rejected, "precision fp16", "cosine 0.97"));
  ASSERT_TRUE(r->screened.has_value());
  EXPECT_EQ(r->screened->precision, Precision::kMixed);
  ASSERT_EQ(r->precisions.size(), 2u);

  // A rerun with the same history and budget judges nothing again.
  FakeMeasurer third;
  auto again = History::Open(path, nullptr);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(RunSearch(Resnet(), space, {.accuracy_tag = "cosine=0.999"}, third, *again, clock).ok());
  EXPECT_TRUE(third.judged.empty());
  // Another budget is judged again.
  FakeMeasurer fourth;
  ASSERT_TRUE(RunSearch(Resnet(), space, {.accuracy_tag = "cosine=0.99"}, fourth, *again, clock).ok());
  EXPECT_EQ(fourth.judged.size(), 1u);  // fp16, within by the fake's default
}

TEST(Search, PrunedCandidatesAreNeverServed) {
  FakeMeasurer m;
  // Batch 32 takes 30 ms in-process: over a 20 ms budget.
  m.SetInProcess([](const EngineChoice&, int64_t batch) -> Expected<Measurement> {
    const double ms = batch == 32 ? 30.0 : 1.0 + batch * 0.5;
    return Measurement{ms, batch * 1000.0 / ms};
  });
  m.SetServed(ScriptedServed);
  auto r = Search(m, Resnet(), SmallSpace(), {.latency_budget_ms = 20});
  ASSERT_TRUE(r.ok());
  for (const ServedCandidate& c : m.served_calls) EXPECT_NE(c.batch, 32) << c.Key();
  EXPECT_TRUE(Mentions(r->rejected, "batch=32", "exceeds the 20.000 ms budget"));
  // Once batch 8 on two instances was served, batch 1 cannot catch up.
  for (const ServedCandidate& c : m.served_calls) EXPECT_NE(c.batch, 1) << c.Key();
}

TEST(Search, GraphsAreNeverMeasuredForAVariableSequenceDim) {
  FakeMeasurer m;
  ModelTraits bert = Resnet();
  bert.variable_non_batch_dim = true;
  auto r = Search(m, bert, SmallSpace(), {});
  ASSERT_TRUE(r.ok());
  for (const std::string& k : m.in_process_calls) EXPECT_EQ(k.find("graphs=1"), std::string::npos) << k;
  for (const ServedCandidate& c : m.served_calls) EXPECT_FALSE(c.engine.cuda_graphs);
  EXPECT_TRUE(Mentions(r->rejected, "cuda_graphs", "fixed shapes"));
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_FALSE(r->winner->engine.cuda_graphs);
}

TEST(Search, AFailedCaptureIsNotKeptAndSaysWhy) {
  FakeMeasurer m;
  m.SetInProcess([](const EngineChoice& e, int64_t batch) -> Expected<Measurement> {
    if (e.cuda_graphs) return Internal("ORT refused to capture a CUDA graph at batch 32");
    return Measurement{1.0 + batch * 0.25, 0};
  });
  m.SetServed(ScriptedServed);
  auto r = Search(m, Resnet(), SmallSpace(), {});
  ASSERT_TRUE(r.ok());
  for (const ServedCandidate& c : m.served_calls) EXPECT_FALSE(c.engine.cuda_graphs) << c.Key();
  EXPECT_TRUE(Mentions(r->rejected, "graphs=1", "refused to capture"));
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_FALSE(r->winner->engine.cuda_graphs);
}

// Run l2 on the H200: serve padded every batch when busy, and candidates measured a
// twentieth of their in-process speed. Such a goodput is measured again
// before it wins or loses, and neither stops the search.
TEST(Search, AnAnomalousGoodputIsMeasuredAgainAndNeverWins) {
  FakeMeasurer m;
  m.SetInProcess(ScriptedInProcess);
  m.SetServed([](const ServedCandidate& c, double budget) -> Expected<Measurement> {
    // Two instances thrash whatever is done; one instance serves normally.
    if (c.instances == 2) return Measurement{budget / 5, 378};
    return ScriptedServed(c, budget);
  });
  ServedCandidate once{.instances = 1, .batch = 32, .pad_to_preferred = true};
  once.engine.prefer_nhwc = true;
  once.engine.cuda_graphs = true;
  m.QueueServed(once, {300});  // anomalous the first time only
  auto r = Search(m, Resnet(), SmallSpace(), {.latency_budget_ms = 20});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_EQ(r->winner->instances, 1);
  bool flagged = false;
  bool resolved = false;
  for (const ServedOutcome& o : r->served) {
    if (o.candidate.instances == 2) {
      EXPECT_TRUE(o.anomalous) << o.candidate.Key();
      EXPECT_NE(o.anomaly.find("of its in-process ceiling"), std::string::npos) << o.anomaly;
      EXPECT_EQ(o.goodputs.size(), 2u);  // measured again, anomalous too; never a leader
      flagged = true;
    }
    if (o.candidate == once) {
      EXPECT_FALSE(o.anomalous);
      EXPECT_EQ(o.discarded, std::vector<double>{300});
      EXPECT_NE(o.anomaly.find("kept (the first set aside)"), std::string::npos) << o.anomaly;
      resolved = true;
    }
  }
  EXPECT_TRUE(flagged);
  EXPECT_TRUE(resolved);
  // The winner's goodputs hold no anomalous figure.
  for (const Contender& c : r->leaders) {
    if (c.candidate == *r->winner) {
      for (double g : c.goodputs) EXPECT_GT(g, 1000);
    }
  }
}

TEST(Search, TheServedCapListsWhatWasNotServed) {
  FakeMeasurer m;
  m.SetInProcess(ScriptedInProcess);
  m.SetServed(ScriptedServed);
  auto r = Search(m, Resnet(), SmallSpace(), {.max_served = 2});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->served.size(), 2u);
  ASSERT_FALSE(r->unmeasured.empty());
  EXPECT_TRUE(Mentions(r->unmeasured, "inst=", "cap of 2 served candidates"));
  EXPECT_TRUE(r->winner.has_value());
}

// --max-minutes: a served measurement takes 40 s, a repeat 20 s. The search
// stops serving new candidates while the leaders' repeats still fit, and
// finishes within the limit with its winner decided on repeats.
TEST(Search, TheTimeLimitKeepsTimeForTheLeadersRepeats) {
  FakeClock clock;
  FakeMeasurer m;
  m.SetInProcess(H200InProcess);
  m.SetServed(H200Served);
  m.AdvanceClockPerMeasurement(&clock, 2'000'000'000);  // in-process: 2 s a batch
  class Timed : public Measurer {
   public:
    Timed(FakeMeasurer& inner, FakeClock& clock) : inner_(inner), clock_(clock) {}
    Expected<PrecisionVerdict> JudgePrecision(Precision p) override { return inner_.JudgePrecision(p); }
    std::vector<Expected<Measurement>> InProcess(const EngineChoice& e, const std::vector<int64_t>& b) override {
      return inner_.InProcess(e, b);
    }
    Expected<Measurement> Served(const ServedCandidate& c, const ServedLoad& load) override {
      clock_.Advance(load.start_concurrency > 1 ? 18'000'000'000 : 38'000'000'000);  // + the fake's 2 s
      return inner_.Served(c, load);
    }

   private:
    FakeMeasurer& inner_;
    FakeClock& clock_;
  } timed(m, clock);
  History h;
  SpaceOptions space;
  space.adaptive_padding = {false};
  const int64_t limit = int64_t{6} * 60'000'000'000;
  auto r = RunSearch(Resnet(128), space, {.latency_budget_ms = 20, .max_wall_ns = limit}, timed, h, clock);
  ASSERT_TRUE(r.ok());
  EXPECT_LE(r->wall_s, 6 * 60.0);
  ASSERT_TRUE(r->winner.has_value());
  for (const Contender& c : r->leaders) EXPECT_EQ(c.goodputs.size(), 3u) << c.candidate.Key();
  ASSERT_FALSE(r->unmeasured.empty());
  EXPECT_TRUE(Mentions(r->unmeasured, "inst=", "kept for the leaders' repeats"));
  // Repeats start near the first measurement's best point (32 connections).
  for (const ServedLoad& l : m.served_loads) EXPECT_TRUE(l.start_concurrency == 1 || l.start_concurrency == 16);
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
  EXPECT_GE(r->reused, static_cast<int>(first.in_process_calls.size() + first.served_calls.size()));
  EXPECT_EQ(r->winner, winner);
}

// What CI's two cores saw (a served goodput of 2,431 one time and 12,469
// the next): a search run to its end, then run again with the same history,
// measures nothing new, however noisy the repeats. The rerun recalls every
// repeat from the start, so the search must not decide differently from
// what it knew when it first walked the path.
TEST(Search, ARerunOfAFinishedSearchMeasuresNothingNewUnderNoise) {
  for (const double on_start : {0.9, 0.0}) {
    for (uint32_t seed = 1; seed <= 40; ++seed) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", repeat_on_start_ratio " << on_start);
      const std::string path = TempPath();
      uint32_t state = seed;
      // Served goodput times a factor in 0.2..1.8 drawn per measurement.
      auto noisy = [&state](const ServedCandidate& c, double budget) -> Expected<Measurement> {
        state = state * 1664525u + 1013904223u;
        const double factor = 0.2 + 1.6 * static_cast<double>(state >> 8) / static_cast<double>(1u << 24);
        Expected<Measurement> m = ScriptedServed(c, budget);
        m->items_per_s *= factor;
        return m;
      };
      const SearchOptions options{.repeat_on_start_ratio = on_start};
      FakeClock clock;
      for (const int limit : {6, 0}) {  // stopped by a limit, then run to its end
        FakeMeasurer m;
        m.SetInProcess(ScriptedInProcess);
        m.SetServed(noisy);
        SearchOptions o = options;
        o.max_evaluations = limit;
        auto h = History::Open(path, nullptr);
        ASSERT_TRUE(h.ok());
        ASSERT_TRUE(RunSearch(Resnet(), SmallSpace(), o, m, *h, clock).ok());
      }
      FakeMeasurer third;
      third.SetInProcess(ScriptedInProcess);
      third.SetServed(noisy);
      auto h = History::Open(path, nullptr);
      ASSERT_TRUE(h.ok());
      auto r = RunSearch(Resnet(), SmallSpace(), options, third, *h, clock);
      ASSERT_TRUE(r.ok());
      EXPECT_TRUE(third.served_calls.empty()) << third.served_calls.front().Key();
      EXPECT_EQ(r->evaluations, 0);
    }
  }
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
  m.SetInProcess(ScriptedInProcess);
  m.SetServed(ScriptedServed);
  History h;
  FakeClock clock;
  // Screening takes 4 (two passes), the curves 4: then 3 served.
  auto r = RunSearch(Resnet(), SmallSpace(), {.max_evaluations = 11}, m, h, clock);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->evaluations, 11);
  EXPECT_EQ(m.served_calls.size(), 3u);
  EXPECT_TRUE(r->stopped_early);
  EXPECT_TRUE(r->winner.has_value());
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("limit of 11 measurements"), std::string::npos);
}

TEST(Search, WallTimeLimitThroughTheClock) {
  FakeMeasurer m;
  FakeClock clock;
  m.AdvanceClockPerMeasurement(&clock, 1'000'000'000);  // each measurement takes 1 s
  History h;
  auto r = RunSearch(Resnet(), SmallSpace(), {.max_wall_ns = 3'000'000'000}, m, h, clock);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->evaluations, 3);
  EXPECT_TRUE(r->stopped_early);
  EXPECT_NE(r->notes[0].find("time limit of 0.1 minutes"), std::string::npos) << r->notes[0];
}

TEST(Search, NothingWithinTheBudgetIsSaid) {
  FakeMeasurer m;
  m.SetInProcess([](const EngineChoice&, int64_t batch) -> Expected<Measurement> { return Measurement{50.0, 0}; });
  auto r = Search(m, Resnet(), SmallSpace(), {.latency_budget_ms = 20});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->winner.has_value());
  EXPECT_TRUE(m.served_calls.empty());
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.back().find("no served candidate met the 20 ms latency budget"), std::string::npos);
}

TEST(Search, KeysCarryTheInputsAndTheProtocol) {
  const ServedCandidate c{.batch = 8};
  EXPECT_EQ(InProcessKey(c.engine, 8), "inprocess tf32 nhwc=0 graphs=0 conv=EXHAUSTIVE batch=8");
  EXPECT_EQ(InProcessKey(c.engine, 8, "inputs=seq:128"), "inprocess tf32 nhwc=0 graphs=0 conv=EXHAUSTIVE batch=8 inputs=seq:128");
  EXPECT_EQ(ServedTag({.inputs_tag = "inputs=seq:128", .served_tag = "protocol=grpc"}), "inputs=seq:128 protocol=grpc");
  EXPECT_EQ(ServedTag({.served_tag = "protocol=grpc"}), "protocol=grpc");
  EXPECT_EQ(PrecisionKey(Precision::kFp16, "cosine=0.999"), "precision fp16 budget=cosine=0.999");
}

TEST(Search, AnomaliesAreFarBelowOrFarAboveTheCeiling) {
  const SearchOptions o{.latency_budget_ms = 20};
  ServedBounds b;
  b.ceiling_items_per_s = 7000;
  b.batch_ms = 4.7;
  b.floor_ms = 4.7;
  EXPECT_EQ(IsAnomalous(3000, b, o), "");
  EXPECT_NE(IsAnomalous(378, b, o).find("5% of its in-process ceiling"), std::string::npos);
  EXPECT_NE(IsAnomalous(40000, b, o).find("times its in-process ceiling"), std::string::npos);
  EXPECT_EQ(IsAnomalous(378, ServedBounds{}, o), "");  // no ceiling: nothing to judge by
  // No goodput at all: a verdict for a floor of 6 ms against 20, a glitch at 2.
  b.floor_ms = 6;
  EXPECT_EQ(IsAnomalous(0, b, o), "");
  b.floor_ms = 2;
  EXPECT_NE(IsAnomalous(0, b, o), "");
  // A batch of microseconds is served at the server's own speed, far below it.
  b.batch_ms = 0.003;
  EXPECT_EQ(IsAnomalous(378, b, o), "");
}

}  // namespace
}  // namespace ortgpu::tune
