#include "ort/batch_runner.h"

#include <gtest/gtest.h>

#include <thread>

#include "ort/batching.h"
#include "ort/linear_model.h"

namespace ortgpu {
namespace {

using testing::Linear;

std::vector<Tensor> Request(int64_t rows, float base) {
  Tensor t = Tensor::Zeros("x", DataType::kFloat, {rows, 4});
  for (int64_t i = 0; i < t.element_count(); ++i) t.data_as<float>()[i] = base + 0.25f * static_cast<float>(i);
  return {t};
}

ReshapeRules Batched() {
  ReshapeRules r;
  r.batched = true;
  return r;
}

class BatchRunnerTest : public ::testing::Test {
 protected:
  const Clock& clock_ = RealClock();
  int64_t ready_ = 0;
};

// The staged path (reused buffers, one copy) and the joined-Tensor path
// give the same numbers for every batch, padding rows included.
TEST_F(BatchRunnerTest, StagedBatchesMatchJoinedBatches) {
  BatchRunner staged(Linear(), Batched());
  BatchRunner plain(Linear(), Batched());
  auto a = Request(1, 0.5f), b = Request(3, -2.0f), c = Request(2, 4.0f);
  for (auto [batch, padding] : {std::pair<std::vector<const std::vector<Tensor>*>, int64_t>{{&a, &b}, 0},
                                {{&a, &b, &c}, 2},
                                {{&c}, 1},
                                {{&a}, 0}}) {
    auto got = staged.RunBatch(batch, padding, clock_, ready_);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    auto joined = ConcatBatch(batch, padding);
    ASSERT_TRUE(joined.ok());
    auto want = plain.Run(*joined);
    ASSERT_TRUE(want.ok());
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].shape, (*want)[0].shape);
    EXPECT_EQ((*got)[0].data, (*want)[0].data);
  }
  EXPECT_FALSE(staged.staged_pinned());  // CPU: ordinary memory
}

// Each pinned batch size runs on its own session, other sizes on the main
// one; a batch of a pinned size never reaches the main session.
TEST_F(BatchRunnerTest, PinnedBatchSizesHaveTheirOwnSessions) {
  InstanceSessions sessions;
  sessions.main = Linear();
  sessions.by_batch_rows[4] = Linear();
  sessions.by_batch_rows[8] = Linear();
  const Session* main = sessions.main.get();
  const Session* four = sessions.by_batch_rows[4].get();
  BatchRunner runner(std::move(sessions), Batched());
  EXPECT_EQ(&runner.SessionFor(4), four);
  EXPECT_EQ(&runner.SessionFor(3), main);
  EXPECT_EQ(&runner.session(), main);
  EXPECT_EQ(runner.pinned_batch_sizes(), (std::vector<int64_t>{4, 8}));
  auto a = Request(3, 1.0f);
  auto out = runner.RunBatch({&a}, 1, clock_, ready_);  // 3 rows + 1 padding: the batch-4 session
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{4, 3}));
  auto eight = runner.Run(Request(8, 0.0f));
  ASSERT_TRUE(eight.ok()) << eight.status().ToString();
  EXPECT_EQ((*eight)[0].shape, (std::vector<int64_t>{8, 3}));
}

// With CUDA graphs a padded size runs through the bench's BoundRunner in
// cuda-graph mode (here, on the CPU provider, refused with a message that
// says what to change), while Run keeps to the main session.
TEST_F(BatchRunnerTest, CudaGraphSessionsRunOnlyThroughTheGraphRunner) {
  InstanceSessions sessions;
  sessions.main = Linear();
  sessions.by_batch_rows[4] = Linear();
  sessions.cuda_graphs = true;
  BatchRunner runner(std::move(sessions), Batched());
  auto a = Request(3, 1.0f);
  auto out = runner.RunBatch({&a}, 1, clock_, ready_);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("CUDA graph of batch size 4"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("enable_cuda_graph"), std::string::npos);
  auto direct = runner.Run(Request(4, 0.5f));  // a batch of 4 outside the batcher: the main session
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  auto three = runner.RunBatch({&a}, 0, clock_, ready_);  // an unpadded size: main, staged
  ASSERT_TRUE(three.ok()) << three.status().ToString();
}

// A large batch is joined by several threads; every byte lands where a
// single thread would put it, padding rows are zeros.
TEST(GatherRowsTest, ParallelJoiningGivesTheSameBytesAsOneThread) {
  const size_t row = 1u << 20;  // 1 MiB rows: 9 of them and 2 rows of padding
  std::vector<std::vector<uint8_t>> rows;
  for (int r = 0; r < 9; ++r) rows.emplace_back(row, static_cast<uint8_t>(r + 1));
  std::vector<uint8_t> one(11 * row, 0xff), four(11 * row, 0xff);
  auto plan = [&](std::vector<uint8_t>& dst) {
    std::vector<RowCopy> copies;
    for (int r = 0; r < 9; ++r) copies.push_back({dst.data() + r * row, rows[r].data(), row});
    copies.push_back({dst.data() + 9 * row, nullptr, 2 * row});
    return copies;
  };
  GatherRows(plan(one), 1);
  GatherRows(plan(four), 4);
  EXPECT_EQ(one, four);
  EXPECT_EQ(four[5 * row + 17], 6);
  EXPECT_EQ(four[10 * row], 0);
}

// The buffers hold max_batch_size rows from the first batch on, and a
// batch larger than anything the config allows still runs (the buffers are
// made again): growing batches never read past a buffer.
TEST_F(BatchRunnerTest, StagingGrowsForALargerBatchAndKeepsItsResults) {
  ReshapeRules rules = Batched();
  rules.max_batch_size = 4;
  BatchRunner runner(Linear(), rules);
  BatchRunner plain(Linear(), Batched());
  for (int64_t rows : {1, 4, 2, 6, 3}) {
    auto req = Request(rows, 0.1f * static_cast<float>(rows));
    auto got = runner.RunBatch({&req}, 0, clock_, ready_);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    auto want = plain.Run(req);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ((*got)[0].data, (*want)[0].data) << rows;
  }
}

// workers_per_instance: two runners on one instance's sessions, each with
// its own staging buffers, run batches at the same time and each gets its
// own batch's numbers.
TEST_F(BatchRunnerTest, RunnersSharingSessionsRunConcurrentlyWithTheirOwnBuffers) {
  InstanceSessions sessions;
  sessions.main = Linear();
  sessions.by_batch_rows[2] = Linear();
  BatchRunner first(std::move(sessions), Batched());
  BatchRunner second(first.sessions(), Batched());
  EXPECT_EQ(&first.session(), &second.session());
  BatchRunner reference(Linear(), Batched());
  auto a = Request(2, 1.0f), b = Request(3, -1.0f);
  auto want_a = reference.Run(a), want_b = reference.Run(b);
  ASSERT_TRUE(want_a.ok() && want_b.ok());
  auto work = [&](BatchRunner& r, const std::vector<Tensor>& req, const std::vector<Tensor>& want, bool& ok) {
    int64_t ready = 0;
    ok = true;
    for (int i = 0; i < 200 && ok; ++i) {
      auto got = r.RunBatch({&req}, 0, clock_, ready);
      ok = got.ok() && (*got)[0].data == want[0].data;
    }
  };
  bool ok1 = false, ok2 = false;
  std::thread t([&] { work(second, b, *want_b, ok2); });
  work(first, a, *want_a, ok1);
  t.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
}

TEST_F(BatchRunnerTest, ConfigReshapeAppliesToStagedBatches) {
  ReshapeRules rules = Batched();
  rules.inputs["x"] = {4};      // the client sends [batch, 2, 2]
  rules.outputs["y"] = {3, 1};  // and sees [batch, 3, 1]
  BatchRunner runner(Linear(), rules);
  Tensor t = Tensor::Zeros("x", DataType::kFloat, {2, 2, 2});
  std::vector<Tensor> req{t};
  auto out = runner.RunBatch({&req}, 0, clock_, ready_);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{2, 3, 1}));
}

}  // namespace
}  // namespace ortgpu
