#include "tune/grid.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"
#include "fakes/fake_measurer.h"
#include "tune/h200_scenario.h"
#include "tune/search.h"

namespace ortgpu::tune {
namespace {

using ortgpu::testing::FakeClock;
using ortgpu::testing::FakeMeasurer;

ModelTraits Resnet() {
  ModelTraits t;
  t.max_batch_size = 128;
  return t;
}

// The search with --exhaustive on the H200's figures.
Expected<SearchResult> Exhaustive(FakeMeasurer& m, History& h, int max_evaluations) {
  m.SetInProcess(testing::H200InProcess);
  m.SetServed(testing::H200Served);
  FakeClock clock;
  SpaceOptions space;
  space.adaptive_padding = {false};
  SearchOptions options;
  options.exhaustive = true;
  options.max_evaluations = max_evaluations;
  return RunSearch(Resnet(), space, options, m, h, clock);
}

TEST(Grid, TheGridIsSmallAndValid) {
  EngineChoice graphs;
  graphs.cuda_graphs = true;
  SpaceOptions space;
  space.adaptive_padding = {false};
  const auto g = GridCandidates(graphs, Resnet(), space, GridOptions{}, nullptr);
  // 3 batches x 2 instances x 2 workers x 2 delays, all padded.
  EXPECT_EQ(g.size(), 24u);
  for (const ServedCandidate& c : g) {
    EXPECT_TRUE(c.pad_to_preferred);
    EXPECT_FALSE(c.adaptive_padding);
    EXPECT_EQ(c.engine, graphs);
  }
  // Unpadded points with CUDA graphs are not valid (serve captures padded sizes only).
  GridOptions both;
  both.padding = {true, false};
  std::vector<Rejected> rejected;
  EXPECT_EQ(GridCandidates(graphs, Resnet(), space, both, &rejected).size(), 24u);
  EXPECT_EQ(rejected.size(), 24u);
  // A model that does not batch: batch 1 without queue or padding.
  ModelTraits fixed;
  const auto one = GridCandidates(EngineChoice{}, fixed, space, GridOptions{}, nullptr);
  ASSERT_FALSE(one.empty());
  for (const ServedCandidate& c : one) {
    EXPECT_EQ(c.batch, 1);
    EXPECT_EQ(c.max_queue_delay_us, 0);
  }
}

// --exhaustive on the H200's figures: the grid is measured after the search,
// what the search served is not served again, and the winner's share of the
// grid's best is the target.
TEST(Grid, TheExhaustiveRunMeasuresTheGridOnceAndComparesTheWinner) {
  FakeMeasurer m;
  History h;
  auto r = Exhaustive(m, h, 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->grid.has_value());
  const GridResult& g = *r->grid;
  EXPECT_TRUE(g.complete);
  EXPECT_EQ(g.measured, 24);
  // Nothing was served more often than a leader is: what the search served
  // was not served again for the grid.
  std::map<std::string, int> calls;
  for (const ServedCandidate& c : m.served_calls) ++calls[c.Key()];
  for (const auto& [key, n] : calls) EXPECT_LE(n, SearchOptions{}.repeats) << key;
  ASSERT_TRUE(g.best.has_value());
  EXPECT_GT(g.ratio, 0.95) << r->winner->Key() << " vs " << g.best->Key() << " served " << r->served.size();
  EXPECT_GT(g.winner_goodput, 0);
  // The grid's best was measured again, as the leaders are.
  EXPECT_NE(h.Find(ServedKey(*g.best, SearchOptions{}.latency_budget_ms), 2), nullptr);
}

// --max-gpu-memory against what serving measured: the estimate is a floor,
// so candidates it lets through can use more. A served candidate or grid
// point measured over the limit neither wins nor is the grid's best, and
// says by how much; what needs at least its memory is not served after it.
TEST(Grid, WhatMeasuresOverTheMemoryLimitNeitherWinsNorIsTheGridsBest) {
  FakeMeasurer m;
  m.SetInProcess(testing::H200InProcess);
  constexpr double kMiB = 1024.0 * 1024;
  // The device in use while serving: 512 MiB of context, and per instance
  // 256 MiB of weights and 16 MiB per row of each worker's batch.
  auto in_use = [&](const ServedCandidate& c) {
    return (512 + c.instances * (256 + c.workers_per_instance * c.batch * 16)) * kMiB;
  };
  m.SetServed([&](const ServedCandidate& c, double budget) -> Expected<Measurement> {
    ORTGPU_ASSIGN_OR_RETURN(Measurement served, testing::H200Served(c, budget));
    served.gpu_memory_bytes = in_use(c);
    return served;
  });
  ModelTraits traits = Resnet();
  traits.gpu_memory_limit_bytes = static_cast<int64_t>(1536 * kMiB);
  History h;
  FakeClock clock;
  SpaceOptions space;
  space.adaptive_padding = {false};
  SearchOptions options;
  options.exhaustive = true;
  auto r = RunSearch(traits, space, options, m, h, clock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->winner.has_value());
  EXPECT_LE(in_use(*r->winner), 1536 * kMiB) << r->winner->Key();
  std::vector<ServedCandidate> over;
  for (const ServedOutcome& o : r->served) {
    EXPECT_EQ(o.over_memory, in_use(o.candidate) > 1536 * kMiB) << o.candidate.Key();
    if (!o.over_memory) continue;
    EXPECT_EQ(o.error, "over the GPU memory limit: " + std::to_string(static_cast<int64_t>(in_use(o.candidate) / kMiB)) +
                           " MiB in use while serving (the whole device), the limit 1536 MiB");
    // Nothing served after it needed at least its memory.
    for (const ServedCandidate& before : over) EXPECT_FALSE(NeedsAtLeastTheMemoryOf(o.candidate, before)) << o.candidate.Key();
    over.push_back(o.candidate);
  }
  EXPECT_FALSE(over.empty()) << "the H200 scenario serves candidates over 1.5 GiB";
  EXPECT_TRUE(std::any_of(r->rejected.begin(), r->rejected.end(), [](const Rejected& x) {
    return x.reason.find("needs at least the memory of ") != std::string::npos &&
           x.reason.find(", which was over the GPU memory limit: ") != std::string::npos;
  }));
  ASSERT_TRUE(r->grid.has_value());
  ASSERT_TRUE(r->grid->best.has_value());
  EXPECT_LE(in_use(*r->grid->best), 1536 * kMiB) << r->grid->best->Key();
  int skipped = 0;
  for (const GridPoint& p : r->grid->points) {
    if (in_use(p.candidate) <= 1536 * kMiB) continue;
    EXPECT_FALSE(p.goodput.has_value()) << p.candidate.Key();
    EXPECT_NE(p.error.find("over the GPU memory limit"), std::string::npos) << p.candidate.Key() << ": " << p.error;
    if (p.error.rfind("needs at least the memory of ", 0) == 0) {
      ++skipped;
      EXPECT_EQ(std::count(m.served_calls.begin(), m.served_calls.end(), p.candidate), 0) << p.candidate.Key();
    }
  }
  EXPECT_GT(skipped, 0) << "the grid serves none of what an over-memory point rules out";
  EXPECT_TRUE(r->grid->complete);
}

// One lucky figure does not make the grid's best: the best point is measured
// again, and a point that falls back loses the title.
TEST(Grid, ALuckyFirstFigureIsMeasuredAgainBeforeItIsTheBest) {
  FakeMeasurer m;
  ServedCandidate lucky{.instances = 1, .batch = 16, .pad_to_preferred = true, .adaptive_padding = false,
                        .max_queue_delay_us = 2000, .workers_per_instance = 1};
  lucky.engine = {.precision = Precision::kFp16, .prefer_nhwc = true, .cuda_graphs = true, .fuse_conv_bias = true};
  m.QueueServed(lucky, {40000, 3000, 3000});
  History h;
  auto r = Exhaustive(m, h, 0);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->grid.has_value());
  ASSERT_TRUE(r->grid->best.has_value());
  EXPECT_NE(*r->grid->best, lucky);
  EXPECT_NE(h.Find(ServedKey(lucky, SearchOptions{}.latency_budget_ms), 2), nullptr);
  EXPECT_GT(r->grid->ratio, 0.95);
}

TEST(Grid, AnIncompleteGridContinuesFromTheHistory) {
  FakeMeasurer m;
  History h;
  auto r = Exhaustive(m, h, 40);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->grid.has_value());
  EXPECT_FALSE(r->grid->complete);
  FakeMeasurer again;
  auto rest = Exhaustive(again, h, 0);
  ASSERT_TRUE(rest.ok());
  ASSERT_TRUE(rest->grid.has_value());
  EXPECT_TRUE(rest->grid->complete);
  EXPECT_TRUE(again.in_process_calls.empty());
}

}  // namespace
}  // namespace ortgpu::tune
