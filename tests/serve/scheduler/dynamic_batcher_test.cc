#include "serve/scheduler/dynamic_batcher.h"

#include "serve/protocol/statistics_json.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <optional>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fakes/fake_clock.h"
#include "ort/batching.h"

namespace ortgpu::serve {
namespace {

Tensor Rows(const std::string& name, std::vector<float> values, int64_t cols) {
  Tensor t = Tensor::Zeros(name, DataType::kFloat, {static_cast<int64_t>(values.size()) / cols, cols});
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

// y = 2 * x; records the batch sizes it ran and can be held at a gate.
class DoublingRunner : public InstanceRunner {
 public:
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    std::function<void()> before;
    {
      std::unique_lock<std::mutex> lock(mu);
      ++entered;
      cv.notify_all();
      cv.wait(lock, [&] { return open; });
      batches.push_back(inputs[0].shape[0]);
      threads.push_back(std::this_thread::get_id());
      before = throw_next;
      throw_next = nullptr;
    }
    if (before) before();  // throws
    if (clock != nullptr) clock->Advance(ns_per_row * inputs[0].shape[0]);
    if (fail_with.code() != Code::kOk) return fail_with;
    Tensor y = inputs[0];
    y.name = "y";
    for (int64_t i = 0; i < y.element_count(); ++i) y.data_as<float>()[i] *= 2;
    return std::vector<Tensor>{y};
  }
  GpuTurn* gpu_turn() const override { return turn; }
  const BatchCosts* batch_costs() const override { return costs.empty() ? nullptr : &costs; }
  bool RunsInline() const override { return runs_inline; }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
  void WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered >= n; });
  }
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;
  int entered = 0;
  std::vector<int64_t> batches;
  std::vector<std::thread::id> threads;  // the thread of each batch
  bool runs_inline = false;              // what RunsInline() reports
  testing::FakeClock* clock = nullptr;   // advanced by ns_per_row per row of each run
  int64_t ns_per_row = 0;
  Status fail_with;
  std::function<void()> throw_next;  // run (and cleared) by the next Run, after the gate
  GpuTurn* turn = nullptr;           // what gpu_turn() reports (the test holds it)
  BatchCosts costs;                  // what batch_costs() reports (empty: null)
};

// The statistics as the HTTP endpoint writes them (version "1" of "m").
nlohmann::json StatsJson(const ModelStats& stats) {
  return protocol::StatisticsToJson({stats.Snapshot("m", "1")})["model_stats"][0];
}

// Dynamic batching with these sizes and delay.
BatchPolicy Batching(int max_batch_size, std::vector<int> preferred, int64_t delay_ns) {
  BatchPolicy p;
  p.max_batch_size = max_batch_size;
  p.dynamic_batching = true;
  p.preferred_batch_sizes = std::move(preferred);
  p.max_queue_delay_ns = delay_ns;
  return p;
}

struct HarnessOptions {
  bool gate_closed = false;
  int instances = 1;
  GpuTurn* turn = nullptr;  // every runner's gpu_turn()
  bool runs_inline = false;  // every runner's RunsInline()
  int64_t ns_per_row = 0;    // what each run takes on the harness's clock, per row
};

// A batcher over DoublingRunners on a FakeClock: time moves only when the
// test advances `clock`.
struct Harness {
  explicit Harness(BatcherOptions o, bool gate_closed = false) : Harness(o, HarnessOptions{gate_closed}) {}
  Harness(BatcherOptions o, HarnessOptions ho) {
    std::vector<std::unique_ptr<InstanceRunner>> runners;
    for (int i = 0; i < ho.instances; ++i) {
      auto r = std::make_unique<DoublingRunner>();
      r->open = !ho.gate_closed;
      r->turn = ho.turn;
      r->runs_inline = ho.runs_inline;
      if (ho.ns_per_row > 0) {
        r->clock = &clock;
        r->ns_per_row = ho.ns_per_row;
      }
      all_runners.push_back(r.get());
      runners.push_back(std::move(r));
    }
    runner = all_runners[0];
    batcher = std::make_unique<DynamicBatcher>(o, std::move(runners), clock, stats, nullptr);
  }
  // Sends one request; `refused` receives Enqueue's status.
  std::future<Expected<InferResponse>> Send(Tensor x, Status* refused = nullptr, int64_t deadline_ns = 0) {
    auto promise = std::make_shared<std::promise<Expected<InferResponse>>>();
    auto fut = promise->get_future();
    QueuedRequest item;
    item.request.model_name = "m";
    item.request.deadline_ns = deadline_ns;
    item.request.inputs.push_back(std::move(x));
    item.done = [promise](Expected<InferResponse> r) { promise->set_value(std::move(r)); };
    Status st = batcher->Enqueue(item);
    if (refused) *refused = st;
    if (!st.ok()) item.done(st);
    return fut;
  }
  testing::FakeClock clock;
  ModelStats stats;
  DoublingRunner* runner;
  std::vector<DoublingRunner*> all_runners;
  std::unique_ptr<DynamicBatcher> batcher;
};

TEST(BatchingTest, ConcatThenSplitGivesBackEachRequestsRows) {
  std::vector<Tensor> a{Rows("x", {1, 2, 3, 4}, 2)}, b{Rows("x", {5, 6}, 2)};
  auto joined = ConcatBatch({&a, &b});
  ASSERT_TRUE(joined.ok());
  EXPECT_EQ((*joined)[0].shape, (std::vector<int64_t>{3, 2}));
  auto split = SplitBatch(*joined, {2, 1});
  ASSERT_TRUE(split.ok());
  EXPECT_EQ((*split)[0][0].data, a[0].data);
  EXPECT_EQ((*split)[1][0].data, b[0].data);
  // The pieces are views of the batch's one output buffer, not copies.
  const TensorBytes& first = (*split)[0][0].data;
  const TensorBytes& second = (*split)[1][0].data;
  EXPECT_TRUE(first.borrowed());
  EXPECT_EQ(first.owner(), second.owner());
  EXPECT_EQ(second.data(), first.data() + first.size());
  EXPECT_NE(BatchKey(a), BatchKey({Rows("x", {1, 2, 3}, 3)}));
  EXPECT_EQ(BatchKey(a), BatchKey(b));
}

TEST(BatchingTest, SplitRejectsAnOutputThatIsNotBatched) {
  std::vector<Tensor> outputs{Rows("y", {1, 2}, 2)};
  auto split = SplitBatch(outputs, {2, 1});
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("max_batch_size: 0"), std::string::npos);
}

TEST(DynamicBatcherTest, JoinsConcurrentRequestsIntoThePreferredBatchAndSplitsOutputs) {
  BatcherOptions o;
  o.batching = Batching(8, {4}, 60'000'000'000);  // the fake clock never reaches the delay
  Harness h(o);
  std::vector<std::future<Expected<InferResponse>>> futures;
  for (int i = 0; i < 4; ++i) futures.push_back(h.Send(Rows("x", {float(i), float(i) + 0.5f}, 2)));
  for (int i = 0; i < 4; ++i) {
    auto r = futures[i].get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->outputs.size(), 1u);
    EXPECT_EQ(r->outputs[0].shape, (std::vector<int64_t>{1, 2}));
    EXPECT_FLOAT_EQ(r->outputs[0].data_as<float>()[0], 2.0f * i);
    EXPECT_FLOAT_EQ(r->outputs[0].data_as<float>()[1], 2.0f * i + 1.0f);
  }
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{4}));
  EXPECT_EQ(h.stats.BatchSizes(), (std::map<int64_t, uint64_t>{{4, 1}}));
  auto json = StatsJson(h.stats);
  EXPECT_EQ(json["inference_count"], 4);
  EXPECT_EQ(json["execution_count"], 1);
  EXPECT_EQ(json["inference_stats"]["success"]["count"], 4);
}

TEST(DynamicBatcherTest, RequestsWithDifferentShapesAreNotJoined) {
  BatcherOptions o;
  o.batching = Batching(8, {}, 0);
  Harness h(o, /*gate_closed=*/true);
  auto first = h.Send(Rows("x", {1, 2}, 2));
  h.runner->WaitEntered(1);  // the worker holds the first; the next two queue up
  auto a = h.Send(Rows("x", {1, 2, 3}, 3));
  auto b = h.Send(Rows("x", {4, 5}, 2));
  h.runner->Open();
  ASSERT_TRUE(first.get().ok());
  ASSERT_TRUE(a.get().ok());
  ASSERT_TRUE(b.get().ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{1, 1, 1}));
}

TEST(DynamicBatcherTest, QueueDelayRunsAnIncompleteBatchOnlyOnceTheClockReachesIt) {
  BatcherOptions o;
  o.batching = Batching(8, {4}, 1'000'000);  // 1 ms
  Harness h(o);
  auto r = h.Send(Rows("x", {3, 4}, 2));
  h.clock.AwaitWaits(1);  // the worker waits for the delay
  h.clock.Advance(999'999);
  h.clock.AwaitWaits(2);  // woke, found the delay not over, waits again
  EXPECT_TRUE(h.runner->batches.empty());
  h.clock.Advance(1);
  ASSERT_TRUE(r.get().ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{1}));
}

TEST(DynamicBatcherTest, ASmallerPreferredSizeRunsAtOnceWithoutWaitingForTheLargest) {
  BatcherOptions o;
  o.batching = Batching(8, {2, 4}, 60'000'000'000);  // the fake clock never reaches the delay
  Harness h(o);
  auto a = h.Send(Rows("x", {1, 2}, 2));
  h.clock.AwaitWaits(1);  // one row: not a preferred size, the worker waits
  auto b = h.Send(Rows("x", {3, 4}, 2));  // two rows: preferred, runs now
  ASSERT_TRUE(a.get().ok());
  ASSERT_TRUE(b.get().ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{2}));
}

// The worker is busy while rows pile up past their delay: it takes the
// largest prefix that is a preferred size, then the rest.
TEST(DynamicBatcherTest, AfterTheDelayTheLargestPreferredSizeThatFitsRunsFirst) {
  BatcherOptions o;
  o.batching = Batching(8, {2, 4}, 1'000'000);
  Harness h(o, /*gate_closed=*/true);
  auto busy = h.Send(Rows("x", {0, 0, 0, 0, 0, 0, 0, 0}, 2));  // 4 rows: preferred, taken at once
  h.runner->WaitEntered(1);
  std::vector<std::future<Expected<InferResponse>>> queued;
  for (int i = 0; i < 3; ++i) queued.push_back(h.Send(Rows("x", {float(i), 0}, 2)));
  h.clock.Advance(5'000'000);  // every queued request is past its delay
  h.runner->Open();
  ASSERT_TRUE(busy.get().ok());
  for (int i = 0; i < 3; ++i) {
    auto r = queued[i].get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FLOAT_EQ(r->outputs[0].data_as<float>()[0], 2.0f * i);
  }
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{4, 2, 1}));
  EXPECT_EQ(h.stats.BatchSizes(), (std::map<int64_t, uint64_t>{{1, 1}, {2, 1}, {4, 1}}));
}

// While another batch holds the GPU, a batch that could still grow waits,
// past its delay, and goes the moment the GPU is released; a full one goes
// at once (to wait for the GPU with its inputs ready).
TEST(DynamicBatcherTest, WhileTheGpuIsBusyABatchGrowsAndGoesWhenTheGpuIsReleased) {
  BatcherOptions o;
  o.batching = Batching(8, {2, 4}, 1'000'000);
  GpuTurn turn;
  Harness h(o, HarnessOptions{.turn = &turn});
  std::optional<GpuTurn::Held> held(turn.Take());  // another batch runs
  auto a = h.Send(Rows("x", {1, 2, 3, 4}, 2));     // 2 rows: preferred, yet held back
  h.clock.AwaitWaits(1);
  h.clock.Advance(5'000'000);  // past its delay: still held back
  h.clock.AwaitWaits(2);
  EXPECT_TRUE(h.runner->batches.empty());
  auto b = h.Send(Rows("x", {5, 6, 7, 8}, 2));  // 4 rows: the largest preferred size goes now
  ASSERT_TRUE(a.get().ok());
  ASSERT_TRUE(b.get().ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{4}));

  auto c = h.Send(Rows("x", {1, 2, 3, 4}, 2));
  h.clock.AwaitWaits(3);
  h.clock.Advance(5'000'000);
  h.clock.AwaitWaits(4);
  held.reset();  // the GPU is free: the release wakes the worker (the fake clock stands still)
  ASSERT_TRUE(c.get().ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{4, 2}));
}

TEST(DynamicBatcherTest, PaddingRunsOnlyPreferredSizesAndGivesBackExactlyEachRequestsRows) {
  BatcherOptions o;
  o.model_name = "m";
  o.batching = Batching(8, {4}, 0);
  o.batching.pad_to_preferred_batch_size = true;
  Harness h(o, /*gate_closed=*/true);
  auto busy = h.Send(Rows("x", {1, 2, 3, 4, 5, 6}, 2));  // 3 rows, padded to 4
  h.runner->WaitEntered(1);
  auto a = h.Send(Rows("x", {7, 8}, 2));
  auto b = h.Send(Rows("x", {9, 10, 11, 12}, 2));
  auto c = h.Send(Rows("x", {13, 14, 15, 16, 17, 18}, 2));  // 1 + 2 + 3 rows: 3 fit in 4, then 3 alone
  h.runner->Open();
  auto expect_doubled = [](std::future<Expected<InferResponse>>& f, std::vector<float> x) {
    auto r = f.get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->outputs.size(), 1u);
    EXPECT_EQ(r->outputs[0].shape, (std::vector<int64_t>{static_cast<int64_t>(x.size()) / 2, 2}));
    std::vector<float> got(r->outputs[0].data_as<float>(), r->outputs[0].data_as<float>() + x.size());
    for (float& v : x) v *= 2;
    EXPECT_EQ(got, x);
  };
  expect_doubled(busy, {1, 2, 3, 4, 5, 6});
  expect_doubled(a, {7, 8});
  expect_doubled(b, {9, 10, 11, 12});
  expect_doubled(c, {13, 14, 15, 16, 17, 18});
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{4, 4, 4}));
  auto json = StatsJson(h.stats);
  EXPECT_EQ(json["execution_count"], 3);
  EXPECT_EQ(json["inference_count"], 9);  // the requests' rows, not the padding
  ASSERT_EQ(json["batch_stats"].size(), 1u);
  EXPECT_EQ(json["batch_stats"][0]["batch_size"], 4);  // the executed size, padding included
  EXPECT_EQ(json["batch_stats"][0]["compute_infer"]["count"], 3);
}

// Padding to [4] with a cost table where padding does not pay on an idle
// instance (4 rows cost twice 1 row).
BatcherOptions PaddedTo4() {
  BatcherOptions o;
  o.model_name = "m";
  o.batching = Batching(4, {4}, 0);
  o.batching.pad_to_preferred_batch_size = true;
  return o;
}
const BatchCosts kCostsTo4{{1, 2, 4}, {1'000'000, 1'400'000, 2'000'000}};

// Issue 25: with [32] and padding one client's lone requests each ran as a
// padded batch of 32 (p50 9.7 ms against 1.2 ms for batch 1 in process).
TEST(DynamicBatcherTest, Issue25ALoneRequestOnAnIdleInstanceRunsUnpadded) {
  Harness h(PaddedTo4());
  h.runner->costs = kCostsTo4;
  auto r = h.Send(Rows("x", {1, 2}, 2)).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outputs[0].shape, (std::vector<int64_t>{1, 2}));
  auto three = h.Send(Rows("x", {1, 2, 3, 4, 5, 6}, 2)).get();  // 3 rows: no light size holds them below 4
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{1, 4}));
  auto json = StatsJson(h.stats);
  ASSERT_EQ(json["batch_stats"].size(), 2u);
  EXPECT_EQ(json["batch_stats"][0]["batch_size"], 1);  // what ran: unpadded
  EXPECT_EQ(json["batch_stats"][1]["batch_size"], 4);
  EXPECT_EQ(json["inference_count"], 4);
}

TEST(DynamicBatcherTest, Issue25WhileAnotherBatchHoldsTheGpuABatchWaitsThenRunsAtTheSizeThatHoldsIt) {
  BatcherOptions o = PaddedTo4();
  GpuTurn turn;
  Harness h(o, HarnessOptions{.turn = &turn});
  h.runner->costs = kCostsTo4;
  std::optional<GpuTurn::Held> held(turn.Take());  // another batch runs
  // 3 rows, then 2 that do not fit beside them: the 3 cannot grow, so they
  // go now, at 4 (no light size below the preferred 4 holds 3 rows).
  auto a = h.Send(Rows("x", {1, 2, 3, 4, 5, 6}, 2));
  auto b = h.Send(Rows("x", {7, 8, 9, 10}, 2));
  ASSERT_TRUE(a.get().ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{4}));  // b waits for the GPU
  held.reset();  // the GPU is idle again: b runs as its own 2 rows
  ASSERT_TRUE(b.get().ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{4, 2}));
}

// Run l4: requests queued behind a batch padded it to the preferred size,
// GPU work for nothing; it runs at its light size like any other.
TEST(DynamicBatcherTest, ABatchWithRequestsQueuedBehindItRunsAtItsLightSize) {
  Harness h(PaddedTo4(), /*gate_closed=*/true);
  h.runner->costs = kCostsTo4;
  auto first = h.Send(Rows("x", {1, 2}, 2));  // runs as 1 row, held at the gate
  h.runner->WaitEntered(1);
  auto a = h.Send(Rows("x", {3, 4}, 2));
  auto other = h.Send(Rows("x", {5, 6, 7}, 3));  // another shape: cannot join a
  h.runner->Open();
  ASSERT_TRUE(first.get().ok());
  ASSERT_TRUE(a.get().ok());
  ASSERT_TRUE(other.get().ok());
  // a ran with `other` queued behind it, as its own 1 row; `other` then alone.
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{1, 1, 1}));
}

// Regression (issue 8): without dynamic_batching a request of 32 rows was
// filed under batch_size 1 and counted as one inference.
TEST(DynamicBatcherTest, WithoutDynamicBatchingARequestIsFiledUnderItsRows) {
  BatcherOptions o;
  o.model_name = "m";
  o.batching.max_batch_size = 32;
  o.batching.dynamic_batching = false;
  Harness h(o);
  ASSERT_TRUE(h.Send(Rows("x", std::vector<float>(64, 1.0f), 2)).get().ok());
  ASSERT_TRUE(h.Send(Rows("x", {1, 2}, 2)).get().ok());
  auto json = StatsJson(h.stats);
  EXPECT_EQ(json["inference_count"], 33);
  EXPECT_EQ(json["execution_count"], 2);
  ASSERT_EQ(json["batch_stats"].size(), 2u);
  EXPECT_EQ(json["batch_stats"][0]["batch_size"], 1);
  EXPECT_EQ(json["batch_stats"][1]["batch_size"], 32);
}

TEST(DynamicBatcherTest, AFullQueueAnswersResourceExhausted) {
  BatcherOptions o;
  o.model_name = "m";
  o.max_queue_size = 1;
  Harness h(o, /*gate_closed=*/true);
  auto running = h.Send(Rows("x", {1, 2}, 2));
  h.runner->WaitEntered(1);
  auto queued = h.Send(Rows("x", {1, 2}, 2));
  Status refused;
  auto rejected = h.Send(Rows("x", {1, 2}, 2), &refused);
  EXPECT_EQ(refused.code(), Code::kResourceExhausted);
  EXPECT_NE(refused.message().find("max_queue_size 1"), std::string::npos) << refused.message();
  EXPECT_FALSE(rejected.get().ok());
  h.runner->Open();
  EXPECT_TRUE(running.get().ok());
  EXPECT_TRUE(queued.get().ok());
}

TEST(DynamicBatcherTest, ARunFailureFailsEveryRequestOfTheBatchAndKeepsServing) {
  BatcherOptions o;
  Harness h(o);
  h.runner->fail_with = ResourceExhausted("CUDA out of memory");
  auto r = h.Send(Rows("x", {1, 2}, 2)).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted);
  h.runner->fail_with = Status();
  EXPECT_TRUE(h.Send(Rows("x", {1, 2}, 2)).get().ok());
  EXPECT_EQ(StatsJson(h.stats)["inference_stats"]["fail"]["count"], 1);
}

// Regression (review item 1a): a model whose config sets no max_queue_size
// used to queue without limit.
TEST(DynamicBatcherTest, WithoutAConfiguredMaxQueueSizeTheQueueStopsAt1024) {
  BatcherOptions o;
  o.model_name = "m";
  o.max_queue_size = 0;  // what config.pbtxt without default_queue_policy gives
  Harness h(o, /*gate_closed=*/true);
  std::vector<std::future<Expected<InferResponse>>> accepted;
  accepted.push_back(h.Send(Rows("x", {1, 2}, 2)));
  h.runner->WaitEntered(1);  // the worker holds the first; the rest queue up
  for (size_t i = 0; i < kDefaultMaxQueueSize; ++i) {
    Status st;
    accepted.push_back(h.Send(Rows("x", {1, 2}, 2), &st));
    ASSERT_TRUE(st.ok()) << "request " << i << ": " << st.message();
  }
  EXPECT_EQ(h.batcher->queue_size(), kDefaultMaxQueueSize);
  Status refused;
  auto rejected = h.Send(Rows("x", {1, 2}, 2), &refused);
  EXPECT_EQ(refused.code(), Code::kResourceExhausted);
  EXPECT_NE(refused.message().find("max_queue_size 1024 (the default)"), std::string::npos) << refused.message();
  h.runner->Open();
  for (auto& f : accepted) EXPECT_TRUE(f.get().ok());
}

TEST(DynamicBatcherTest, TheConfiguredMaxQueueSizeWinsOverTheDefault) {
  BatcherOptions o;
  o.max_queue_size = 2000;
  Harness h(o, /*gate_closed=*/true);
  std::vector<std::future<Expected<InferResponse>>> accepted;
  accepted.push_back(h.Send(Rows("x", {1, 2}, 2)));
  h.runner->WaitEntered(1);
  for (size_t i = 0; i < kDefaultMaxQueueSize + 1; ++i) {
    Status st;
    accepted.push_back(h.Send(Rows("x", {1, 2}, 2), &st));
    ASSERT_TRUE(st.ok()) << "request " << i << ": " << st.message();
  }
  h.runner->Open();
  for (auto& f : accepted) EXPECT_TRUE(f.get().ok());
}

// Regression (review item 1b): a request whose client had given up (HTTP 504)
// stayed queued and still ran.
TEST(DynamicBatcherTest, ARequestPastItsDeadlineIsAnsweredDeadlineExceededWithoutRunning) {
  BatcherOptions o;
  o.model_name = "m";
  Harness h(o, HarnessOptions{.gate_closed = true});
  auto running = h.Send(Rows("x", {1, 2}, 2));
  h.runner->WaitEntered(1);
  Status st;
  auto late = h.Send(Rows("x", {3, 4}, 2), &st, h.clock.NowNanos() + 5'000'000);
  ASSERT_TRUE(st.ok()) << st.message();
  auto in_time = h.Send(Rows("x", {5, 6}, 2), &st, h.clock.NowNanos() + 60'000'000'000);
  ASSERT_TRUE(st.ok()) << st.message();
  auto no_deadline = h.Send(Rows("x", {7, 8}, 2));
  h.clock.Advance(10'000'000);  // 10 ms later: `late` is 5 ms past its deadline
  h.runner->Open();

  auto r = late.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("waited 10 ms in the queue"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("was not run"), std::string::npos) << r.status().message();
  EXPECT_TRUE(running.get().ok());
  EXPECT_TRUE(in_time.get().ok());
  EXPECT_TRUE(no_deadline.get().ok());
  EXPECT_EQ(h.runner->batches.size(), 3u);  // `late` never reached the runner
  auto json = StatsJson(h.stats);
  EXPECT_EQ(json["inference_stats"]["fail"]["count"], 1);
  EXPECT_EQ(json["inference_stats"]["success"]["count"], 3);
}

TEST(DynamicBatcherTest, ARequestAlreadyPastItsDeadlineIsRefusedAtTheDoor) {
  BatcherOptions o;
  Harness h(o);
  Status refused;
  auto r = h.Send(Rows("x", {1, 2}, 2), &refused, h.clock.NowNanos() - 1);
  EXPECT_EQ(refused.code(), Code::kDeadlineExceeded);
  EXPECT_FALSE(r.get().ok());
  EXPECT_TRUE(h.runner->batches.empty());
  EXPECT_EQ(h.batcher->queue_size(), 0u);
}

// Regression (review item 2): an exception inside Execute reached
// std::terminate and every queued callback was lost.
TEST(DynamicBatcherTest, ABatchThatThrowsBadAllocFailsItsRequestsAndTheWorkerKeepsServing) {
  BatcherOptions o;
  o.model_name = "m";
  o.batching = Batching(8, {2}, 60'000'000'000);  // the fake clock never reaches the delay
  Harness h(o);
  h.runner->throw_next = [] { throw std::bad_alloc(); };
  auto a = h.Send(Rows("x", {1, 2}, 2));
  auto b = h.Send(Rows("x", {3, 4}, 2));
  for (auto* f : {&a, &b}) {
    auto r = f->get();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kResourceExhausted);
    EXPECT_NE(r.status().message().find("ran out of host memory while running the model"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("batch of 2 requests"), std::string::npos) << r.status().message();
  }
  auto c = h.Send(Rows("x", {1, 2}, 2));
  auto d = h.Send(Rows("x", {3, 4}, 2));
  EXPECT_TRUE(c.get().ok());
  EXPECT_TRUE(d.get().ok());
  EXPECT_EQ(StatsJson(h.stats)["inference_stats"]["fail"]["count"], 2);
}

TEST(DynamicBatcherTest, ARunnerThatThrowsFailsTheRequestWithInternalNamingTheError) {
  BatcherOptions o;
  o.model_name = "m";
  Harness h(o, /*gate_closed=*/true);
  h.runner->throw_next = [] { throw std::runtime_error("vector::_M_range_check"); };
  auto thrown = h.Send(Rows("x", {1, 2}, 2));
  h.runner->WaitEntered(1);
  auto queued = h.Send(Rows("x", {3, 4}, 2));  // waits behind the throwing run: must still be answered
  h.runner->Open();
  auto r = thrown.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInternal);
  EXPECT_NE(r.status().message().find("vector::_M_range_check"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("model 'm'"), std::string::npos) << r.status().message();
  EXPECT_TRUE(queued.get().ok());
}

// Per-thread runner state (ORT's captured CUDA graphs) is made on the
// worker's own thread, and the loader learns of a failure before READY.
class PreparingRunner : public DoublingRunner {
 public:
  explicit PreparingRunner(Status result) : result_(std::move(result)) {}
  Status PrepareOnWorker() override {
    prepared_on = std::this_thread::get_id();
    return result_;
  }
  std::thread::id prepared_on;

 private:
  Status result_;
};

TEST(DynamicBatcherTest, EachRunnerIsPreparedOnItsOwnWorkerThreadAndAFailureIsReported) {
  testing::FakeClock clock;
  ModelStats stats;
  std::vector<std::unique_ptr<InstanceRunner>> runners;
  auto ok = std::make_unique<PreparingRunner>(Status::Ok());
  auto bad = std::make_unique<PreparingRunner>(Internal("capture failed"));
  PreparingRunner* first = ok.get();
  PreparingRunner* second = bad.get();
  runners.push_back(std::move(ok));
  runners.push_back(std::move(bad));
  BatcherOptions o;
  o.batching = Batching(4, {4}, 0);
  DynamicBatcher batcher(o, std::move(runners), clock, stats, nullptr);
  Status prepared = batcher.WaitUntilPrepared();
  EXPECT_EQ(prepared.message(), "capture failed");
  EXPECT_NE(first->prepared_on, std::this_thread::get_id());
  EXPECT_NE(second->prepared_on, std::this_thread::get_id());
  EXPECT_NE(first->prepared_on, second->prepared_on);
  batcher.Stop();
}

TEST(DynamicBatcherTest, ACallbackThatThrowsDoesNotStopTheWorker) {
  BatcherOptions o;
  Harness h(o);
  QueuedRequest item;
  item.request.model_name = "m";
  item.request.inputs.push_back(Rows("x", {1, 2}, 2));
  std::promise<void> called;
  item.done = [&called](Expected<InferResponse>) {
    called.set_value();
    throw std::runtime_error("client callback");
  };
  ASSERT_TRUE(h.batcher->Enqueue(item).ok());
  called.get_future().get();
  EXPECT_TRUE(h.Send(Rows("x", {1, 2}, 2)).get().ok());
}

// Regression (review item 4): with several instances, a worker that computed
// the queue-delay deadline from a front request another worker then took
// dispatched the next request at that stale deadline, without its own wait.
TEST(DynamicBatcherTest, WithTwoInstancesEveryRequestGetsItsOwnQueueDelay) {
  constexpr int64_t kDelay = 300'000'000;
  BatcherOptions o;
  o.model_name = "m";
  o.batching = Batching(8, {}, kDelay);
  Harness h(o, HarnessOptions{.instances = 2});
  // Different non-batch dims: the second request cannot ride in the first's batch.
  auto first = h.Send(Rows("x", {1, 2}, 2));
  h.clock.AwaitWaits(1);
  h.clock.Advance(kDelay / 3);  // ages the first request so the two deadlines differ
  auto second = h.Send(Rows("x", {1, 2, 3}, 3));
  h.clock.Advance(kDelay - kDelay / 3);  // the first's delay is over, the second's is not
  ASSERT_TRUE(first.get().ok());
  h.clock.Advance(kDelay / 3);  // now the second's is
  ASSERT_TRUE(second.get().ok());
  // Each waited exactly its own delay on the clock: had the second run at
  // the first's deadline it would have waited 2/3 of it.
  auto json = StatsJson(h.stats);
  EXPECT_EQ(json["inference_stats"]["queue"]["count"], 2);
  EXPECT_EQ(json["inference_stats"]["queue"]["ns"], 2 * kDelay);
}

TEST(DynamicBatcherTest, ARequestWaitingForTheQueueDelayIsAnsweredAtItsOwnDeadline) {
  BatcherOptions o;
  o.model_name = "m";
  o.batching = Batching(8, {4}, 60'000'000'000);  // the delay is never reached
  Harness h(o);
  Status st;
  auto r = h.Send(Rows("x", {1, 2}, 2), &st, h.clock.NowNanos() + 5'000'000);
  ASSERT_TRUE(st.ok()) << st.message();
  h.clock.AwaitWaits(1);
  h.clock.Advance(5'000'000);
  auto answer = r.get();
  EXPECT_EQ(answer.status().code(), Code::kDeadlineExceeded);
  EXPECT_TRUE(h.runner->batches.empty());
}

TEST(DynamicBatcherTest, StopRunsARequestWaitingForTheQueueDelayWithoutWaiting) {
  BatcherOptions o;
  o.batching = Batching(8, {4}, 60'000'000'000);
  Harness h(o);
  auto r = h.Send(Rows("x", {1, 2}, 2));
  h.clock.AwaitWaits(1);
  h.batcher->Stop();
  EXPECT_TRUE(r.get().ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{1}));
}

// --busy-poll-us: a worker that polls the queue before sleeping still runs
// every request, one after the other as a client in a loop sends them, and
// stops when asked.
TEST(DynamicBatcherTest, BusyPollingWorkersServeEveryRequestAndStop) {
  BatcherOptions o;
  o.model_name = "m";
  o.busy_poll_ns = 2'000'000;
  Harness h(o, HarnessOptions{false, 2});
  for (int i = 0; i < 50; ++i) {
    auto r = h.Send(Rows("x", {1, 2}, 2)).get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  h.batcher->Stop();
  EXPECT_EQ(StatsJson(h.stats)["inference_stats"]["success"]["count"], 50);
}

TEST(DynamicBatcherTest, StopFinishesQueuedRequestsAndRefusesNewOnes) {
  BatcherOptions o;
  Harness h(o, /*gate_closed=*/true);
  auto a = h.Send(Rows("x", {1, 2}, 2));
  h.runner->WaitEntered(1);
  auto b = h.Send(Rows("x", {1, 2}, 2));
  std::thread stopper([&] { h.batcher->Stop(); });
  h.runner->Open();
  stopper.join();
  EXPECT_TRUE(a.get().ok());
  EXPECT_TRUE(b.get().ok());
  Status refused;
  h.Send(Rows("x", {1, 2}, 2), &refused).get().status().IgnoreError();
  EXPECT_EQ(refused.code(), Code::kUnavailable);
}

// Issue 29 item 4: a lone request that finds an idle instance able to run
// on any thread runs on the caller's thread, once the instance's last batch
// shows it is quick; the first batch always goes to the worker.
void WaitIdle(const DynamicBatcher& b) {
  while (!b.idle()) std::this_thread::yield();
}

TEST(DynamicBatcherTest, ALoneRequestRunsOnTheCallersThreadOnceTheInstanceIsKnownQuick) {
  BatcherOptions o;
  o.batching.max_batch_size = 8;  // no dynamic batching: every request runs alone at once
  Harness h(o, HarnessOptions{.runs_inline = true});
  ASSERT_TRUE(h.Send(Rows("x", {1, 2}, 2)).get().ok());
  WaitIdle(*h.batcher);
  auto second = h.Send(Rows("x", {3, 4}, 2));
  // Answered before Send returned: it ran here.
  ASSERT_EQ(second.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  auto r = second.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FLOAT_EQ(r->outputs[0].data_as<float>()[1], 8.0f);
  ASSERT_EQ(h.runner->threads.size(), 2u);
  EXPECT_NE(h.runner->threads[0], std::this_thread::get_id()) << "the first batch: on the worker";
  EXPECT_EQ(h.runner->threads[1], std::this_thread::get_id());
  EXPECT_EQ(h.batcher->inline_runs(), 1);
  auto json = StatsJson(h.stats);
  EXPECT_EQ(json["inference_count"], 2) << "filed as any execution";
  EXPECT_EQ(json["execution_count"], 2);
}

TEST(DynamicBatcherTest, NothingRunsInlineWhenTheBoundIsZeroTheRunnerCannotOrBatchingWouldWait) {
  for (int c = 0; c < 3; ++c) {
    BatcherOptions o;
    o.batching.max_batch_size = 8;
    if (c == 0) o.inline_max_run_ns = 0;
    // A lone request of 1 row below the preferred 4 waits for others (the
    // fake clock never reaches the delay: the worker runs it at Stop).
    if (c == 2) o.batching = Batching(8, {4}, 60'000'000'000);
    Harness h(o, HarnessOptions{.runs_inline = c != 1});
    if (c == 2) {
      // A first batch of the preferred size, so the runner is known quick.
      std::vector<std::future<Expected<InferResponse>>> four;
      for (int i = 0; i < 4; ++i) four.push_back(h.Send(Rows("x", {1, 2}, 2)));
      for (auto& f : four) ASSERT_TRUE(f.get().ok());
    } else {
      ASSERT_TRUE(h.Send(Rows("x", {1, 2}, 2)).get().ok());
    }
    WaitIdle(*h.batcher);
    auto lone = h.Send(Rows("x", {3, 4}, 2));
    if (c == 2) h.batcher->Stop();
    ASSERT_TRUE(lone.get().ok());
    EXPECT_EQ(h.batcher->inline_runs(), 0) << "case " << c;
    for (auto id : h.runner->threads) EXPECT_NE(id, std::this_thread::get_id()) << "case " << c;
  }
}

// The bound is on what the request should take: the last batch's time
// scaled by the rows (50 us a row here, 200 us allowed).
TEST(DynamicBatcherTest, ARequestWithMoreRowsThanTheBoundAllowsGoesToTheWorker) {
  BatcherOptions o;
  o.batching.max_batch_size = 8;
  Harness h(o, HarnessOptions{.runs_inline = true, .ns_per_row = 50'000});
  ASSERT_TRUE(h.Send(Rows("x", {1, 2}, 2)).get().ok());  // 1 row, 50 us: on the worker (the first)
  WaitIdle(*h.batcher);
  ASSERT_TRUE(h.Send(Rows("x", {1, 2, 3, 4, 5, 6, 7, 8}, 2)).get().ok());  // 4 rows, 200 us: inline
  WaitIdle(*h.batcher);
  EXPECT_EQ(h.batcher->inline_runs(), 1);
  // The last batch: 4 rows in 200 us; 5 rows should take 250 us.
  ASSERT_TRUE(h.Send(Rows("x", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2)).get().ok());
  WaitIdle(*h.batcher);
  EXPECT_EQ(h.batcher->inline_runs(), 1);
  ASSERT_EQ(h.runner->threads.size(), 3u);
  EXPECT_EQ(h.runner->threads[1], std::this_thread::get_id());
  EXPECT_NE(h.runner->threads[2], std::this_thread::get_id());
}

TEST(DynamicBatcherTest, WhileItsRunnerIsLentTheWorkerTakesNothingAndThenTheQueue) {
  BatcherOptions o;
  o.batching.max_batch_size = 8;
  Harness h(o, HarnessOptions{.runs_inline = true});
  ASSERT_TRUE(h.Send(Rows("x", {1, 2}, 2)).get().ok());
  WaitIdle(*h.batcher);
  {
    std::lock_guard<std::mutex> lock(h.runner->mu);
    h.runner->open = false;
  }
  // A caller thread borrows the runner and is held in the run.
  std::future<Expected<InferResponse>> lent;
  std::thread caller([&] { lent = h.Send(Rows("x", {3, 4}, 2)); });
  h.runner->WaitEntered(2);
  // The one worker's runner is lent: this request queues.
  auto queued = h.Send(Rows("x", {5, 6}, 2));
  EXPECT_EQ(h.batcher->queue_size(), 1u);
  {
    std::lock_guard<std::mutex> lock(h.runner->mu);
    EXPECT_EQ(h.runner->entered, 2) << "the worker took nothing while its runner was lent";
  }
  h.runner->Open();
  caller.join();
  ASSERT_TRUE(lent.get().ok());
  auto r = queued.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FLOAT_EQ(r->outputs[0].data_as<float>()[0], 10.0f);
  EXPECT_EQ(h.batcher->inline_runs(), 1);
  ASSERT_EQ(h.runner->threads.size(), 3u);
  EXPECT_NE(h.runner->threads[2], std::this_thread::get_id()) << "the queued one ran on the worker";
}

TEST(DynamicBatcherTest, StopWaitsForALentRunnerToComeBack) {
  BatcherOptions o;
  o.batching.max_batch_size = 8;
  auto h = std::make_unique<Harness>(o, HarnessOptions{.runs_inline = true});
  ASSERT_TRUE(h->Send(Rows("x", {1, 2}, 2)).get().ok());
  WaitIdle(*h->batcher);
  {
    std::lock_guard<std::mutex> lock(h->runner->mu);
    h->runner->open = false;
  }
  std::future<Expected<InferResponse>> lent;
  std::thread caller([&] { lent = h->Send(Rows("x", {3, 4}, 2)); });
  h->runner->WaitEntered(2);
  std::thread stopper([&] { h->batcher->Stop(); });
  // Stop cannot finish while the run holds the runner; the run then ends
  // normally, and Stop with it.
  h->runner->Open();
  caller.join();
  stopper.join();
  ASSERT_TRUE(lent.get().ok());
  EXPECT_EQ(h->batcher->inline_runs(), 1);
}

}  // namespace
}  // namespace ortgpu::serve
