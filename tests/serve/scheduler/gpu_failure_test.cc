// A GPU lost while serving (issue 30): a batch that fails with a sticky CUDA
// error takes its GPU out; the other GPUs serve; with none left, requests get
// UNAVAILABLE naming the GPU and why.
#include "serve/scheduler/gpu_failure.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "fakes/fake_clock.h"
#include "serve/scheduler/dynamic_batcher.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;

constexpr const char* kIllegalAddress =
    "CUDA failure 700: an illegal memory access was encountered ; GPU=1 ; expr=cudaStreamSynchronize(stream)";

TEST(IsStickyGpuError, TheErrorsThatCorruptAContext) {
  EXPECT_TRUE(IsStickyGpuError(kIllegalAddress));
  EXPECT_TRUE(IsStickyGpuError("CUDA error cudaErrorLaunchFailure:unspecified launch failure"));
  EXPECT_TRUE(IsStickyGpuError("CUDA_ERROR_ECC_UNCORRECTABLE"));
  EXPECT_TRUE(IsStickyGpuError("device-side assert triggered"));
  EXPECT_TRUE(IsStickyGpuError("GPU has fallen off the bus"));
  EXPECT_TRUE(IsStickyGpuError("CUDA failure 999: unknown error"));
}

TEST(IsStickyGpuError, ErrorsTheNextBatchMaySurvive) {
  EXPECT_FALSE(IsStickyGpuError("CUDA failure 2: out of memory"));
  EXPECT_FALSE(IsStickyGpuError("Failed to allocate memory for requested buffer of size 123"));
  EXPECT_FALSE(IsStickyGpuError("Got invalid dimensions for input: x for the following indices"));
  EXPECT_FALSE(IsStickyGpuError("CUDNN_STATUS_NOT_SUPPORTED"));
  EXPECT_FALSE(IsStickyGpuError(""));
}

// Echoes its input on GPU `gpu`; a runner on a GPU in `broken` fails with a
// sticky error. Every batch's GPU is recorded.
class GpuRunner : public InstanceRunner {
 public:
  GpuRunner(int gpu, bool broken, std::mutex& mu, std::vector<int>& ran_on)
      : gpu_(gpu), broken_(broken), mu_(mu), ran_on_(ran_on) {}
  int device() const override { return gpu_; }
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    {
      std::lock_guard lock(mu_);
      ran_on_.push_back(gpu_);
    }
    if (broken_) return Internal(kIllegalAddress);
    return inputs;
  }

 private:
  const int gpu_;
  const bool broken_;
  std::mutex& mu_;
  std::vector<int>& ran_on_;
};

struct Host {
  // One runner per entry of `gpus`; those on `broken` fail.
  Host(const std::vector<int>& gpus, int broken) {
    std::vector<std::unique_ptr<InstanceRunner>> runners;
    for (int g : gpus) runners.push_back(std::make_unique<GpuRunner>(g, g == broken, mu, ran_on));
    BatcherOptions o;
    o.model_name = "m";
    o.model_version = "1";
    batcher = std::make_unique<DynamicBatcher>(o, std::move(runners), clock, stats, nullptr);
    EXPECT_TRUE(batcher->WaitUntilPrepared().ok());
  }
  // Sends one request and waits for its answer (Unavailable when refused).
  Expected<InferResponse> Call() {
    auto promise = std::make_shared<std::promise<Expected<InferResponse>>>();
    auto fut = promise->get_future();
    QueuedRequest item;
    item.request.model_name = "m";
    item.request.inputs.push_back(Tensor::Zeros("x", DataType::kFloat, {4}));
    item.done = [promise](Expected<InferResponse> r) { promise->set_value(std::move(r)); };
    if (Status st = batcher->Enqueue(item); !st.ok()) return st;
    return fut.get();
  }

  ortgpu::testing::FakeClock clock;
  ModelStats stats;
  std::mutex mu;
  std::vector<int> ran_on;
  std::unique_ptr<DynamicBatcher> batcher;
};

TEST(GpuLostWhileServing, ItsInstancesStopAndTheOtherGpuServes) {
  Host host({0, 0, 1, 1}, /*broken=*/1);
  int failed = 0;
  for (int i = 0; i < 40; ++i) {
    auto r = host.Call();
    if (!r.ok()) {
      ++failed;
      EXPECT_THAT(r.status().message(), HasSubstr("illegal memory access"));
    }
  }
  // At most the one batch that found GPU 1 broken failed; every request
  // after it ran on GPU 0.
  EXPECT_LE(failed, 1);
  const auto lost = host.batcher->LostGpus();
  if (failed == 1) {
    ASSERT_EQ(lost.size(), 1u);
    EXPECT_THAT(lost.at(1), HasSubstr("illegal memory access"));
    std::lock_guard lock(host.mu);
    const auto first_on_1 = std::find(host.ran_on.begin(), host.ran_on.end(), 1);
    EXPECT_EQ(std::count(first_on_1 + 1, host.ran_on.end(), 1), 0);  // GPU 1 ran nothing after
  }
}

TEST(GpuLostWhileServing, WithNoGpuLeftRequestsAreUnavailableNamingIt) {
  Host host({0, 0}, /*broken=*/0);
  auto first = host.Call();
  ASSERT_FALSE(first.ok());
  EXPECT_THAT(first.status().message(), HasSubstr("illegal memory access"));
  auto next = host.Call();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), Code::kUnavailable);
  EXPECT_THAT(next.status().message(), HasSubstr("model 'm' version 1 has no GPU left to run on (GPU 0: CUDA failure 700"));
  EXPECT_EQ(host.batcher->LostGpus().size(), 1u);
}

// Out of memory is not sticky: the GPU keeps serving.
TEST(GpuLostWhileServing, OutOfMemoryDoesNotTakeTheGpuOut) {
  class OomOnce : public InstanceRunner {
   public:
    int device() const override { return 0; }
    Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
      if (calls_++ == 0) return ResourceExhausted("CUDA failure 2: out of memory");
      return inputs;
    }

   private:
    int calls_ = 0;
  };
  ortgpu::testing::FakeClock clock;
  ModelStats stats;
  std::vector<std::unique_ptr<InstanceRunner>> runners;
  runners.push_back(std::make_unique<OomOnce>());
  BatcherOptions o;
  o.model_name = "m";
  o.model_version = "1";
  DynamicBatcher batcher(o, std::move(runners), clock, stats, nullptr);
  ASSERT_TRUE(batcher.WaitUntilPrepared().ok());
  for (int i = 0; i < 2; ++i) {
    std::promise<Expected<InferResponse>> promise;
    auto fut = promise.get_future();
    QueuedRequest item;
    item.request.model_name = "m";
    item.request.inputs.push_back(Tensor::Zeros("x", DataType::kFloat, {4}));
    item.done = [&promise](Expected<InferResponse> r) { promise.set_value(std::move(r)); };
    ASSERT_TRUE(batcher.Enqueue(item).ok());
    EXPECT_EQ(fut.get().ok(), i == 1);
  }
  EXPECT_TRUE(batcher.LostGpus().empty());
}

}  // namespace
}  // namespace ortgpu::serve
