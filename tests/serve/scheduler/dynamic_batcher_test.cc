#include "serve/scheduler/dynamic_batcher.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "serve/scheduler/batching.h"

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
    {
      std::unique_lock<std::mutex> lock(mu);
      ++entered;
      cv.notify_all();
      cv.wait(lock, [&] { return open; });
      batches.push_back(inputs[0].shape[0]);
    }
    if (fail_with.code() != Code::kOk) return fail_with;
    Tensor y = inputs[0];
    y.name = "y";
    for (int64_t i = 0; i < y.element_count(); ++i) y.data_as<float>()[i] *= 2;
    return std::vector<Tensor>{y};
  }
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
  Status fail_with;
};

struct Harness {
  explicit Harness(BatcherOptions o, bool gate_closed = false) {
    auto r = std::make_unique<DoublingRunner>();
    r->open = !gate_closed;
    runner = r.get();
    std::vector<std::unique_ptr<InstanceRunner>> runners;
    runners.push_back(std::move(r));
    batcher = std::make_unique<DynamicBatcher>(o, std::move(runners), RealClock(), stats, nullptr);
  }
  std::future<Expected<InferResponse>> Send(Tensor x, Status* refused = nullptr) {
    auto promise = std::make_shared<std::promise<Expected<InferResponse>>>();
    auto fut = promise->get_future();
    QueuedRequest item;
    item.request.model_name = "m";
    item.request.inputs.push_back(std::move(x));
    item.done = [promise](Expected<InferResponse> r) { promise->set_value(std::move(r)); };
    Status st = batcher->Enqueue(item);
    if (refused) *refused = st;
    if (!st.ok()) item.done(st);
    return fut;
  }
  ModelStats stats;
  DoublingRunner* runner;
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
  EXPECT_NE(BatchKey(a), BatchKey({Rows("x", {1, 2, 3}, 3)}));
  EXPECT_EQ(BatchKey(a), BatchKey(b));
}

TEST(BatchingTest, SplitRejectsAnOutputThatIsNotBatched) {
  auto split = SplitBatch({Rows("y", {1, 2}, 2)}, {2, 1});
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("max_batch_size: 0"), std::string::npos);
}

TEST(DynamicBatcherTest, JoinsConcurrentRequestsIntoThePreferredBatchAndSplitsOutputs) {
  BatcherOptions o;
  o.max_batch_size = 8;
  o.preferred_batch_sizes = {4};
  o.max_queue_delay_ns = 60'000'000'000;  // a failure guard only: the preferred size fires first
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
  auto json = h.stats.ToJson("m", "1");
  EXPECT_EQ(json["inference_count"], 4);
  EXPECT_EQ(json["execution_count"], 1);
  EXPECT_EQ(json["inference_stats"]["success"]["count"], 4);
}

TEST(DynamicBatcherTest, RequestsWithDifferentShapesAreNotJoined) {
  BatcherOptions o;
  o.max_batch_size = 8;
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

TEST(DynamicBatcherTest, QueueDelayRunsAnIncompleteBatch) {
  BatcherOptions o;
  o.max_batch_size = 8;
  o.max_queue_delay_ns = 1'000'000;  // 1 ms: one request must not wait for seven more
  Harness h(o);
  auto r = h.Send(Rows("x", {3, 4}, 2)).get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(h.runner->batches, (std::vector<int64_t>{1}));
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
  EXPECT_EQ(h.stats.ToJson("m", "1")["inference_stats"]["fail"]["count"], 1);
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

}  // namespace
}  // namespace ortgpu::serve
