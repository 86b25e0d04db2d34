#include "tune/history.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace ortgpu::tune {
namespace {

std::string TempPath(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(History, AppendsAndReadsBack) {
  const std::string path = TempPath("history.jsonl");
  {
    auto h = History::Open(path, nullptr);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(h->Append({.key = "a", .repeat = 0, .measurement = {2.5, 400}}).ok());
    ASSERT_TRUE(h->Append({.key = "a", .repeat = 1, .measurement = {2.6, 390}}).ok());
    ASSERT_TRUE(h->Append({.key = "b", .error = "graph capture refused"}).ok());
  }
  std::vector<std::string> warnings;
  auto h = History::Open(path, &warnings);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(h->size(), 3u);
  ASSERT_NE(h->Find("a", 1), nullptr);
  EXPECT_DOUBLE_EQ(h->Find("a", 1)->measurement.items_per_s, 390);
  ASSERT_NE(h->Find("b", 0), nullptr);
  EXPECT_EQ(h->Find("b", 0)->error, "graph capture refused");
  EXPECT_EQ(h->Find("c", 0), nullptr);
}

// The precision's verdict and the search's details (noise, connections,
// errors, how the load search ended) survive a rerun.
TEST(History, VerdictsAndTheSearchsDetailsReadBack) {
  const std::string path = TempPath("history.jsonl");
  {
    auto h = History::Open(path, nullptr);
    ASSERT_TRUE(h.ok());
    HistoryEntry verdict{.key = "precision fp16 budget=cosine=0.999"};
    verdict.verdict = PrecisionVerdict{.within_budget = false, .min_cosine = 0.98, .max_rel_error = 0.2, .top1 = 0.97,
                                       .detail = "output 'logits': row cosine 0.98 < 0.999"};
    ASSERT_TRUE(h->Append(verdict).ok());
    HistoryEntry served{.key = "served", .measurement = {9.8, 7266}};
    served.measurement.concurrency = 48;
    served.measurement.errors = 2;
    served.measurement.note = "goodput at 48 connections";
    served.measurement.load_s = 23.5;
    ASSERT_TRUE(h->Append(served).ok());
    HistoryEntry in_process{.key = "inprocess", .measurement = {4.7, 6800}};
    in_process.measurement.rel_noise = 0.012;
    ASSERT_TRUE(h->Append(in_process).ok());
  }
  auto h = History::Open(path, nullptr);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  const HistoryEntry* v = h->Find("precision fp16 budget=cosine=0.999", 0);
  ASSERT_NE(v, nullptr);
  ASSERT_TRUE(v->verdict.has_value());
  EXPECT_FALSE(v->verdict->within_budget);
  EXPECT_DOUBLE_EQ(v->verdict->min_cosine, 0.98);
  EXPECT_EQ(v->verdict->top1, 0.97);
  EXPECT_NE(v->verdict->detail.find("row cosine 0.98"), std::string::npos);
  const HistoryEntry* s = h->Find("served", 0);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->verdict.has_value());
  EXPECT_EQ(s->measurement.concurrency, 48);
  EXPECT_EQ(s->measurement.errors, 2);
  EXPECT_EQ(s->measurement.note, "goodput at 48 connections");
  EXPECT_EQ(s->measurement.load_s, 23.5);
  EXPECT_DOUBLE_EQ(h->Find("inprocess", 0)->measurement.rel_noise, 0.012);
}

// The served measurement's details (perf's steps, memory, load time) travel
// through the history, so a resumed run's report still has them; a line
// written before them reads as it did.
TEST(History, ServedDetailsRoundTripAndOldLinesStillRead) {
  Measurement m{.latency_ms = 9.8, .items_per_s = 7266};
  m.steps = {{1, 812.5, 1.9}, {64, 7266, 9.8}};
  m.gpu_memory_bytes = 5.1e9;
  m.load_s = 4.25;
  auto entries = ParseHistory(HistoryLine({.key = "served", .measurement = m}) +
                                  R"({"key":"old","repeat":0,"latency_ms":2.5,"items_per_s":400})" "\n",
                              "h", nullptr, nullptr);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 2u);
  const Measurement& back = (*entries)[0].measurement;
  ASSERT_EQ(back.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(back.steps[1].load, 64);
  EXPECT_DOUBLE_EQ(back.steps[1].items_per_s, 7266);
  EXPECT_DOUBLE_EQ(back.steps[1].p99_ms, 9.8);
  EXPECT_EQ(back.gpu_memory_bytes, 5.1e9);
  EXPECT_EQ(back.load_s, 4.25);
  const Measurement& old = (*entries)[1].measurement;
  EXPECT_TRUE(old.steps.empty());
  EXPECT_FALSE(old.gpu_memory_bytes.has_value());
  EXPECT_FALSE(old.load_s.has_value());
}

TEST(History, TruncatedLastLineIsIgnoredWithAWarningAndCut) {
  const std::string path = TempPath("history.jsonl");
  const std::string good = HistoryLine({.key = "a", .measurement = {2.5, 400}});
  {
    std::ofstream out(path);
    out << good << R"({"key":"b","repeat":0,"latency_ms":3.)";
  }
  std::vector<std::string> warnings;
  auto h = History::Open(path, &warnings);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("history.jsonl:2: last line is incomplete"), std::string::npos) << warnings[0];
  // The next append starts on a line of its own.
  ASSERT_TRUE(h->Append({.key = "b", .measurement = {3.0, 300}}).ok());
  EXPECT_EQ(ReadAll(path), good + HistoryLine({.key = "b", .measurement = {3.0, 300}}));
}

TEST(History, AValidLastLineWithoutNewlineIsTakenAgain) {
  std::vector<std::string> warnings;
  const std::string line = HistoryLine({.key = "a", .measurement = {2.5, 400}});
  size_t valid = 0;
  auto entries = ParseHistory(line.substr(0, line.size() - 1), "h", &warnings, &valid);
  ASSERT_TRUE(entries.ok());
  EXPECT_TRUE(entries->empty());
  EXPECT_EQ(valid, 0u);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(History, ACorruptLineInTheMiddleIsAnError) {
  const std::string text = HistoryLine({.key = "a", .measurement = {1, 1}}) + "garbage\n" +
                           HistoryLine({.key = "b", .measurement = {1, 1}});
  auto entries = ParseHistory(text, "h.jsonl", nullptr, nullptr);
  ASSERT_FALSE(entries.ok());
  EXPECT_NE(entries.status().message().find("h.jsonl:2"), std::string::npos) << entries.status().message();
  EXPECT_NE(entries.status().message().find("move it aside"), std::string::npos);
}

TEST(History, WithoutAFileNothingIsWritten) {
  History h;
  ASSERT_TRUE(h.Append({.key = "a", .measurement = {1, 1}}).ok());
  EXPECT_NE(h.Find("a", 0), nullptr);
}

}  // namespace
}  // namespace ortgpu::tune
