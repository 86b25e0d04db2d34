#include "serve/gpu_contexts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_environment.h"
#include "fakes/fake_nvml.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ortgpu::testing::FakeEnvironment;
using ortgpu::testing::FakeNvml;

constexpr uint32_t kPid = 777;
constexpr uint64_t kMiB = 1ull << 20;

struct Host {
  FakeNvml nvml;
  VisibleGpus visible;
  FakeEnvironment env;
  explicit Host(int gpus) {
    for (int i = 0; i < gpus; ++i) {
      nvml.AddDevice("NVIDIA H100", "GPU-" + std::to_string(i) + "abc", 9, 0, 80ull << 30, 1ull << 30);
      visible.uuids.push_back("GPU-" + std::to_string(i) + "abc");
      visible.names.push_back("NVIDIA H100");
    }
    EXPECT_TRUE(nvml.Load().ok());
  }
};

ModelSummary OnGpus(std::vector<int> gpus, ModelState state = ModelState::kReady) {
  ModelSummary m;
  m.name = "m";
  m.state = state;
  m.on_gpu = true;
  m.gpus = std::move(gpus);
  return m;
}

TEST(StrayContexts, MemoryOnlyWhereModelsRunIsNone) {
  Host host(2);
  host.nvml.process_memory[{1, kPid}] = 900 * kMiB;
  EXPECT_TRUE(StrayContexts(host.nvml, {OnGpus({1})}, &host.visible, kPid, host.env).empty());
}

// Told to use GPU 1 only, the process made a context on GPU 0 too.
TEST(StrayContexts, AContextOnAGpuNoModelUsesIsNamedWithTheFix) {
  Host host(2);
  host.nvml.process_memory[{1, kPid}] = 900 * kMiB;
  host.nvml.process_memory[{0, kPid}] = 300 * kMiB;
  auto lines = StrayContexts(host.nvml, {OnGpus({1})}, &host.visible, kPid, host.env);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("holds 300 MiB on GPU 0 (NVML's numbering, NVIDIA H100) where no model has an instance"));
  EXPECT_THAT(lines[0], HasSubstr("CUDA_VISIBLE_DEVICES=1"));
}

// Ordinals are matched by UUID: with CUDA_VISIBLE_DEVICES=3,1 the process's
// device 0 is NVML's GPU 3.
TEST(StrayContexts, OrdinalsAreMatchedToNvmlByUuid) {
  Host host(4);
  VisibleGpus visible;
  visible.uuids = {"GPU-3abc", "GPU-1abc"};
  visible.names = {"NVIDIA H100", "NVIDIA H100"};
  host.nvml.process_memory[{3, kPid}] = 900 * kMiB;
  host.nvml.process_memory[{1, kPid}] = 900 * kMiB;
  EXPECT_TRUE(StrayContexts(host.nvml, {OnGpus({0, 1})}, &visible, kPid, host.env).empty());
  host.nvml.process_memory[{2, kPid}] = 100 * kMiB;
  auto lines = StrayContexts(host.nvml, {OnGpus({0, 1})}, &visible, kPid, host.env);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("on GPU 2 "));
  EXPECT_THAT(lines[0], HasSubstr("CUDA_VISIBLE_DEVICES=1,3"));
}

// A GPU a load tried and left out is not stray; a model that is not READY
// (its failed load may have touched any GPU) and a process NVML does not
// list (a container) tell nothing.
TEST(StrayContexts, TriedGpusAreNotStrayAndAFailedLoadOrAnUnlistedProcessTellNothing) {
  Host host(2);
  host.nvml.process_memory[{0, kPid}] = 300 * kMiB;
  ModelSummary left_out = OnGpus({1});
  left_out.failed_gpus = {0};
  EXPECT_TRUE(StrayContexts(host.nvml, {left_out}, &host.visible, kPid, host.env).empty());
  EXPECT_TRUE(StrayContexts(host.nvml, {OnGpus({1}), OnGpus({}, ModelState::kUnavailable)}, &host.visible, kPid,
                            host.env)
                  .empty());
  EXPECT_TRUE(StrayContexts(host.nvml, {OnGpus({1})}, &host.visible, /*pid=*/12345, host.env).empty());
}

}  // namespace
}  // namespace ortgpu::serve
