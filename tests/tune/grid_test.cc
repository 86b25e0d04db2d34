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
