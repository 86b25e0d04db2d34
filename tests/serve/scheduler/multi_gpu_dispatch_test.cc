// The batcher across GPUs (issue 30): a batch goes to a free instance on the
// least-loaded GPU, proved with runners that say they are on fake GPUs and
// hold their batches until the test lets them go.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "fakes/fake_clock.h"
#include "serve/scheduler/dynamic_batcher.h"

namespace ortgpu::serve {
namespace {

// What every runner of one batcher shares: the GPU of each batch that
// started, and the gate that holds them.
struct Floor {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> started_on;  // GPU of each batch, in start order
  bool open = false;

  void WaitStarted(size_t n) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return started_on.size() >= n; });
  }
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

// Echoes its input on GPU `gpu`, held at the floor's gate.
class GpuRunner : public InstanceRunner {
 public:
  GpuRunner(Floor& floor, int gpu) : floor_(floor), gpu_(gpu) {}
  int device() const override { return gpu_; }
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    std::unique_lock lock(floor_.mu);
    floor_.started_on.push_back(gpu_);
    floor_.cv.notify_all();
    floor_.cv.wait(lock, [&] { return floor_.open; });
    return inputs;
  }

 private:
  Floor& floor_;
  const int gpu_;
};

struct Host {
  // One runner per entry of `gpus` (its GPU), in that order.
  explicit Host(const std::vector<int>& gpus) {
    std::vector<std::unique_ptr<InstanceRunner>> runners;
    for (int g : gpus) runners.push_back(std::make_unique<GpuRunner>(floor, g));
    BatcherOptions o;
    o.model_name = "m";
    o.model_version = "1";
    batcher = std::make_unique<DynamicBatcher>(o, std::move(runners), clock, stats, nullptr);
    EXPECT_TRUE(batcher->WaitUntilPrepared().ok());
  }
  ~Host() {
    floor.Open();
    batcher.reset();
  }
  std::future<Expected<InferResponse>> Send() {
    auto promise = std::make_shared<std::promise<Expected<InferResponse>>>();
    auto fut = promise->get_future();
    QueuedRequest item;
    item.request.model_name = "m";
    item.request.inputs.push_back(Tensor::Zeros("x", DataType::kFloat, {4}));
    item.done = [promise](Expected<InferResponse> r) { promise->set_value(std::move(r)); };
    EXPECT_TRUE(batcher->Enqueue(item).ok());
    return fut;
  }
  // The GPU of each batch started so far, counted per GPU.
  std::map<int, int> StartedPerGpu() {
    std::lock_guard lock(floor.mu);
    std::map<int, int> out;
    for (int g : floor.started_on) ++out[g];
    return out;
  }

  ortgpu::testing::FakeClock clock;
  ModelStats stats;
  Floor floor;
  std::unique_ptr<DynamicBatcher> batcher;
};

// Two instances on GPU 0 and one on GPU 1: the second request goes to GPU 1
// while GPU 0 is busy, though a worker of GPU 0 is free too.
TEST(MultiGpuDispatchTest, ABatchGoesToTheLeastLoadedGpuOfTwo) {
  for (int round = 0; round < 20; ++round) {
    Host host({0, 0, 1});
    std::vector<std::future<Expected<InferResponse>>> answers;
    answers.push_back(host.Send());
    host.floor.WaitStarted(1);
    answers.push_back(host.Send());
    host.floor.WaitStarted(2);
    EXPECT_EQ(host.StartedPerGpu(), (std::map<int, int>{{0, 1}, {1, 1}})) << "round " << round;
    answers.push_back(host.Send());
    host.floor.WaitStarted(3);
    EXPECT_EQ(host.StartedPerGpu(), (std::map<int, int>{{0, 2}, {1, 1}})) << "round " << round;
    host.floor.Open();
    for (auto& a : answers) EXPECT_TRUE(a.get().ok());
  }
}

// Four GPUs with two instances each: four requests in flight run one per GPU.
TEST(MultiGpuDispatchTest, FourRequestsOnFourGpusRunOnePerGpu) {
  for (int round = 0; round < 10; ++round) {
    Host host({0, 0, 1, 1, 2, 2, 3, 3});
    std::vector<std::future<Expected<InferResponse>>> answers;
    for (size_t n = 1; n <= 4; ++n) {
      answers.push_back(host.Send());
      host.floor.WaitStarted(n);
    }
    EXPECT_EQ(host.StartedPerGpu(), (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}})) << "round " << round;
    host.floor.Open();
    for (auto& a : answers) EXPECT_TRUE(a.get().ok());
  }
}

// A burst sent at once spreads too: six requests on eight instances over
// four GPUs run two on two GPUs and one on the others, never three on one.
TEST(MultiGpuDispatchTest, ABurstSpreadsOverTheGpus) {
  for (int round = 0; round < 10; ++round) {
    Host host({0, 0, 1, 1, 2, 2, 3, 3});
    std::vector<std::future<Expected<InferResponse>>> answers;
    for (int n = 0; n < 6; ++n) answers.push_back(host.Send());
    host.floor.WaitStarted(6);
    std::vector<int> counts;
    for (const auto& [gpu, n] : host.StartedPerGpu()) counts.push_back(n);
    std::sort(counts.begin(), counts.end());
    EXPECT_EQ(counts, (std::vector<int>{1, 1, 2, 2})) << "round " << round;
    host.floor.Open();
    for (auto& a : answers) EXPECT_TRUE(a.get().ok());
  }
}

}  // namespace
}  // namespace ortgpu::serve
