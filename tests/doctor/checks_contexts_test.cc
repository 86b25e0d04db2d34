#include "doctor/checks_contexts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_nvml.h"

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;
using ortgpu::testing::FakeNvml;

constexpr uint32_t kPid = 4242;
constexpr uint64_t kMiB = 1ull << 20;

// A host with `n` H100s in NVML, all seen by CUDA in the same order.
struct Host {
  FakeNvml nvml;
  gpu::DriverInfo info;
  explicit Host(int n) {
    for (int i = 0; i < n; ++i) {
      nvml.AddDevice("NVIDIA H100 80GB HBM3", "GPU-" + std::to_string(i), 9, 0, 80ull << 30, 1ull << 30);
      gpu::GpuDevice d;
      d.index = i;
      d.nvml_index = i;
      d.name = "NVIDIA H100 80GB HBM3";
      info.devices.push_back(d);
    }
    EXPECT_TRUE(nvml.Load().ok());
  }
  Finding Check(int cuda_index, int nvml_index, bool in_container = false) {
    Report report;
    CheckContexts(ObserveContexts(nvml, info, cuda_index, nvml_index, kPid, in_container), report);
    EXPECT_EQ(report.findings().size(), 1u);
    return report.findings().at(0);
  }
};

TEST(CheckContexts, OnlyTheGpuAskedForPasses) {
  Host host(2);
  host.nvml.process_memory[{1, kPid}] = 512 * kMiB;
  host.nvml.process_memory[{0, 7}] = 4096 * kMiB;  // another process on GPU 0 is not this one's
  Finding f = host.Check(1, 1);
  EXPECT_EQ(f.id, "health.contexts");
  EXPECT_EQ(f.verdict, Verdict::kPass);
  EXPECT_THAT(f.seen, HasSubstr("512 MiB on GPU 1"));
  EXPECT_THAT(f.seen, HasSubstr("no other of the 2 GPU(s)"));
  EXPECT_EQ(f.facts.at("other_gpus"), "");
  EXPECT_EQ(f.facts.at("own_memory"), std::to_string(512 * kMiB));
}

// ORT #13697: device_id=2, yet a context on GPU 0.
TEST(CheckContexts, AContextOnGpu0WhenAskedForGpu2WarnsWithTheFix) {
  Host host(4);
  host.nvml.process_memory[{2, kPid}] = 900 * kMiB;
  host.nvml.process_memory[{0, kPid}] = 300 * kMiB;
  Finding f = host.Check(2, 2);
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  EXPECT_TRUE(f.gpu);
  EXPECT_EQ(f.title, "this process made a CUDA context on 1 other GPU(s) (300 MiB)");
  EXPECT_THAT(f.seen, HasSubstr("and 300 MiB on GPU 0 (NVIDIA H100 80GB HBM3)"));
  EXPECT_THAT(f.fix, HasSubstr("CUDA_VISIBLE_DEVICES=2"));
  EXPECT_THAT(f.fix, HasSubstr("cudaSetDevice(2)"));
  EXPECT_EQ(f.facts.at("other_gpus"), "0");
  EXPECT_EQ(f.facts.at("other_gpus_memory"), std::to_string(300 * kMiB));
}

TEST(CheckContexts, EveryOtherGpuHeldIsNamedAndAListWithoutAFigureStillCounts) {
  Host host(4);
  host.nvml.process_memory[{1, kPid}] = 900 * kMiB;
  host.nvml.process_memory[{0, kPid}] = 300 * kMiB;
  host.nvml.process_list_status[3] = Unavailable("NVML lists the process but cannot report its memory");
  Finding f = host.Check(1, 1);
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  EXPECT_EQ(f.facts.at("other_gpus"), "0,3");
  EXPECT_THAT(f.seen, HasSubstr("memory not reported on GPU 3"));
}

// Under CUDA_VISIBLE_DEVICES=3 the process's device 0 is NVML's GPU 3.
TEST(CheckContexts, CudaOrdinalAndNvmlIndexAreKeptApart) {
  Host host(4);
  host.nvml.process_memory[{3, kPid}] = 700 * kMiB;
  Finding f = host.Check(0, 3);
  EXPECT_EQ(f.verdict, Verdict::kPass);
  EXPECT_THAT(f.seen, HasSubstr("on GPU 3 (device 0, where it was asked to run)"));
}

// In a container NVML lists host pids: this process is found nowhere, which
// proves nothing either way.
TEST(CheckContexts, NotListedOnItsOwnGpuIsNotCheckedNotPassed) {
  Host host(2);
  Finding f = host.Check(0, 0, /*in_container=*/true);
  EXPECT_EQ(f.verdict, Verdict::kSkip);
  EXPECT_FALSE(f.gpu);  // never fails --require gpu
  EXPECT_THAT(f.seen, HasSubstr("in a container NVML lists host pids"));
}

TEST(CheckContexts, AListNvmlWillNotGiveIsSaidNotHidden) {
  Host host(2);
  host.nvml.process_memory[{0, kPid}] = 512 * kMiB;
  host.nvml.process_list_status[1] = Internal("nvmlDeviceGetComputeRunningProcesses_v3: GPU is lost");
  Finding f = host.Check(0, 0);
  EXPECT_EQ(f.verdict, Verdict::kPass);
  EXPECT_THAT(f.seen, HasSubstr("not read: GPU 1: nvmlDeviceGetComputeRunningProcesses_v3: GPU is lost"));
}

TEST(CheckContexts, AReasonGivenIsOneSkip) {
  ContextObservation obs;
  obs.skip_reason = "no CUDA run in this process (provider layer)";
  Report report;
  CheckContexts(obs, report);
  ASSERT_EQ(report.findings().size(), 1u);
  EXPECT_EQ(report.findings()[0].verdict, Verdict::kSkip);
  EXPECT_EQ(report.findings()[0].seen, "no CUDA run in this process (provider layer)");
}

}  // namespace
}  // namespace ortgpu::doctor
