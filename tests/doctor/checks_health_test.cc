// Layer 2b verdicts from hand-written observations (issue #13): every GPU
// state a user would want flagged, without a GPU.
#include "doctor/checks_health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_gpu_driver.h"
#include "fakes/fake_nvml.h"

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;
using ::ortgpu::testing::FakeGpuDriver;
using ::ortgpu::testing::FakeNvml;

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

// The H200 of the test machine: healthy, Gen5 x16, full clocks under load.
HealthObservation HealthyH200() {
  HealthObservation o;
  o.name = "NVIDIA H200";
  o.cuda_uuid = "GPU-db6efce2-9109-5d84-cc7c-85f99424970e";
  o.memory_total = 141 * kGiB;
  o.own_pid = 100;
  o.health = FakeNvml::HealthyH200();
  o.load_samples = {FakeNvml::FullClock(), FakeNvml::FullClock()};
  o.copies = FakeGpuDriver::H200Copies();
  return o;
}

const Finding& Get(const Report& r, const std::string& id) {
  const Finding* f = r.Find(id);
  if (f == nullptr) ADD_FAILURE() << "no finding " << id;
  static const Finding kNone;
  return f != nullptr ? *f : kNone;
}

TEST(CheckHealth, HealthyH200PassesEveryCheck) {
  Report r;
  CheckHealth(HealthyH200(), r);
  for (const char* id : {"health.persistence", "health.compute_mode", "health.ecc", "health.memory_repair",
                         "health.pcie", "health.mig", "health.processes", "health.clocks", "health.copy"}) {
    EXPECT_EQ(Get(r, id).verdict, Verdict::kPass) << id << ": " << Get(r, id).title << " / " << Get(r, id).seen;
  }
  EXPECT_EQ(r.LayerVerdict(Layer::kHealth), Verdict::kPass);  // pageable vs pinned is info, not a problem
  EXPECT_EQ(r.ExitCode(/*require_gpu=*/true), 0);
  EXPECT_THAT(Get(r, "health.pcie").title, HasSubstr("Gen5 x16"));
  EXPECT_THAT(Get(r, "health.copy").title, HasSubstr("pinned copies 55.6 GB/s (88% of the link)"));
  EXPECT_EQ(Get(r, "health.copy").facts.at("link_gbps"), "63.0");
}

TEST(CheckHealth, PageableFarBelowPinnedSaysWhatItMeansForServing) {
  Report r;
  CheckHealth(HealthyH200(), r);
  const Finding& p = Get(r, "health.copy_pageable");
  EXPECT_EQ(p.verdict, Verdict::kInfo);
  EXPECT_THAT(p.title, HasSubstr("pageable copies at 36% of pinned"));
  EXPECT_THAT(p.seen, HasSubstr("ortgpu serve copies each batch into page-locked buffers"));
  EXPECT_THAT(p.fix, HasSubstr("page-locked"));
}

TEST(CheckHealth, UncorrectableEccErrorsSinceTheDriverLoadedFail) {
  HealthObservation o = HealthyH200();
  o.health.ecc_uncorrected_volatile = 3;
  o.health.ecc_uncorrected_aggregate = 3;
  Report r;
  CheckHealth(o, r);
  const Finding& f = Get(r, "health.ecc");
  EXPECT_EQ(f.verdict, Verdict::kFail);
  EXPECT_EQ(f.title, "3 uncorrectable ECC error(s) since the driver loaded");
  EXPECT_THAT(f.fix, HasSubstr("sudo nvidia-smi -i 0 -r"));
  EXPECT_EQ(r.ExitCode(false), 1);
}

TEST(CheckHealth, PastEccErrorsOnlyWarn) {
  HealthObservation o = HealthyH200();
  o.health.ecc_uncorrected_aggregate = 2;
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.ecc").verdict, Verdict::kWarn);
}

TEST(CheckHealth, EccOffWarns) {
  HealthObservation o = HealthyH200();
  o.health.ecc_current = false;
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.ecc").verdict, Verdict::kWarn);
  EXPECT_THAT(Get(r, "health.ecc").fix, HasSubstr("-e 1"));
}

TEST(CheckHealth, X4LinkInAnX16SlotWarnsWithTheBandwidthLost) {
  HealthObservation o = HealthyH200();
  o.health.pcie_width = 4;
  o.copies->pinned_h2d = 13.5;
  o.copies->pinned_d2h = 13.6;
  Report r;
  CheckHealth(o, r);
  const Finding& f = Get(r, "health.pcie");
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  EXPECT_EQ(f.title, "PCIe link trained at x4 of x16");
  EXPECT_THAT(f.why, HasSubstr("25% of its host bandwidth (15.8 of 63.0 GB/s)"));
  EXPECT_THAT(f.fix, HasSubstr("x16 slot"));
  // The copies reach what an x4 link gives: the link is the cause.
  const Finding& c = Get(r, "health.copy");
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_EQ(c.title, "pinned copies reach 13.6 GB/s, all the degraded PCIe link gives (15.8 of 63.0 GB/s)");
  EXPECT_THAT(c.fix, HasSubstr("health.pcie"));
}

TEST(CheckHealth, SlowCopiesOnAFullLinkPointAtNumaAndTheIommu) {
  HealthObservation o = HealthyH200();
  o.copies->pinned_h2d = 20.0;
  o.copies->pinned_d2h = 21.0;
  Report r;
  CheckHealth(o, r);
  const Finding& c = Get(r, "health.copy");
  EXPECT_EQ(c.verdict, Verdict::kWarn);
  EXPECT_EQ(c.title, "pinned copies reach 21.0 GB/s, 33% of what the link gives");
  EXPECT_THAT(c.fix, HasSubstr("numactl"));
  EXPECT_EQ(Get(r, "health.pcie").verdict, Verdict::kPass);
}

TEST(CheckHealth, Gen3SlotForAGen5GpuWarns) {
  HealthObservation o = HealthyH200();
  o.health.pcie_gen = 3;
  o.health.pcie_gen_max = 3;
  for (auto& s : o.load_samples) s.pcie_gen = 3;
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.pcie").verdict, Verdict::kWarn);
  EXPECT_EQ(Get(r, "health.pcie").title, "the slot allows PCIe Gen3, the GPU does Gen5");
}

TEST(CheckHealth, IdleLinkAtGen1IsPowerSavingNotAFault) {
  HealthObservation o = HealthyH200();
  o.health.pcie_gen = 1;
  o.load_samples.clear();
  o.load_skip_reason = "the end-to-end run was not requested";
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.pcie").verdict, Verdict::kInfo);
  EXPECT_THAT(Get(r, "health.pcie").seen, HasSubstr("lowers its link generation to save power"));
  // Under load the generation counts.
  o.load_samples = {FakeNvml::FullClock()};
  o.load_samples[0].pcie_gen = 2;
  Report loaded;
  CheckHealth(o, loaded);
  EXPECT_EQ(Get(loaded, "health.pcie").verdict, Verdict::kWarn);
  EXPECT_EQ(Get(loaded, "health.pcie").title, "PCIe link at Gen2 under load, though it can do Gen5");
}

TEST(CheckHealth, PowerCapDuringTheRunWarns) {
  HealthObservation o = HealthyH200();
  o.load_samples[1].event_reasons = gpu::kClocksEventSwPowerCap;
  o.load_samples[1].power_limit_mw = 300000;
  Report r;
  CheckHealth(o, r);
  const Finding& f = Get(r, "health.clocks");
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  EXPECT_EQ(f.title, "at its power limit during the run (700 W)");
  EXPECT_EQ(f.facts.at("limiting_reasons"), "SW power cap");
}

TEST(CheckHealth, HardwareSlowdownDuringTheRunWarnsAboutCoolingAndPower) {
  HealthObservation o = HealthyH200();
  o.load_samples[0].event_reasons = gpu::kClocksEventHwSlowdown | gpu::kClocksEventHwPowerBrakeSlowdown;
  o.load_samples[0].sm_clock_mhz = 900;
  Report r;
  CheckHealth(o, r);
  const Finding& f = Get(r, "health.clocks");
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  EXPECT_EQ(f.title, "hardware slowdown during the run: HW slowdown, HW power brake");
  EXPECT_THAT(f.fix, HasSubstr("nvidia-smi -q -d PERFORMANCE"));
}

TEST(CheckHealth, LowSmClockUnderLoadWarns) {
  HealthObservation o = HealthyH200();
  for (auto& s : o.load_samples) s.sm_clock_mhz = 1000;
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.clocks").verdict, Verdict::kWarn);
  EXPECT_EQ(Get(r, "health.clocks").title, "SM clock reached only 1000 of 1980 MHz under load");
}

TEST(CheckHealth, IdleInEverySampleIsSaidNotJudged) {
  HealthObservation o = HealthyH200();
  for (auto& s : o.load_samples) {
    s.event_reasons = gpu::kClocksEventGpuIdle;
    s.sm_clock_mhz = 345;
  }
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.clocks").verdict, Verdict::kInfo);
}

TEST(CheckHealth, ExclusiveProcessComputeModeWarnsAndFailsWhenAnotherProcessHoldsTheGpu) {
  HealthObservation o = HealthyH200();
  o.health.compute_mode = gpu::kNvmlComputeModeExclusiveProcess;
  Report r;
  CheckHealth(o, r);
  const Finding& f = Get(r, "health.compute_mode");
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  EXPECT_EQ(f.title, "compute mode Exclusive Process: one process at a time");
  EXPECT_THAT(f.why, HasSubstr("CUDA_ERROR_DEVICE_BUSY"));
  EXPECT_THAT(f.fix, HasSubstr("sudo nvidia-smi -i 0 -c DEFAULT"));

  o.health.processes = std::vector<gpu::NvmlProcess>{{4242, 20 * kGiB, "tritonserver"}};
  Report busy;
  CheckHealth(o, busy);
  EXPECT_EQ(Get(busy, "health.compute_mode").verdict, Verdict::kFail);
  EXPECT_THAT(Get(busy, "health.compute_mode").why, HasSubstr("another process holds it now"));
}

TEST(CheckHealth, OtherProcessesHoldingMemoryAreListed) {
  HealthObservation o = HealthyH200();
  o.health.processes = std::vector<gpu::NvmlProcess>{{4242, 40 * kGiB, "python3"}, {o.own_pid, 1 * kGiB, ""}};
  Report r;
  CheckHealth(o, r);
  const Finding& f = Get(r, "health.processes");
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  EXPECT_EQ(f.title, "1 other process(es) hold 40.0 GiB of GPU memory");
  EXPECT_THAT(f.seen, HasSubstr("pid 4242 python3 (40.0 GiB)"));
  EXPECT_EQ(f.facts.at("other_processes"), "1");
}

TEST(CheckHealth, PersistenceOffWarns) {
  HealthObservation o = HealthyH200();
  o.health.persistence_mode = false;
  o.in_container = true;
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.persistence").verdict, Verdict::kWarn);
  EXPECT_THAT(Get(r, "health.persistence").fix, HasSubstr("nvidia-persistenced"));
  EXPECT_THAT(Get(r, "health.persistence").fix, HasSubstr("on the host"));
}

TEST(CheckHealth, PendingRowRemapWarnsAndARemapFailureFails) {
  HealthObservation o = HealthyH200();
  o.health.row_remap_pending = true;
  o.health.remapped_rows_uncorrectable = 1;
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.memory_repair").verdict, Verdict::kWarn);
  EXPECT_EQ(Get(r, "health.memory_repair").title, "a memory repair waits for a GPU reset");
  o.health.row_remap_failure = true;
  Report failed;
  CheckHealth(o, failed);
  EXPECT_EQ(Get(failed, "health.memory_repair").verdict, Verdict::kFail);
}

TEST(CheckHealth, PendingRetiredPagesOnAnOlderGpuWarn) {
  HealthObservation o = HealthyH200();
  o.health.row_remap_pending.reset();
  o.health.retired_pages_dbe = 2;
  o.health.retired_pages_sbe = 1;
  o.health.retired_pages_pending = true;
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.memory_repair").verdict, Verdict::kWarn);
  EXPECT_THAT(Get(r, "health.memory_repair").seen, HasSubstr("retired pages: 2 double-bit, 1 single-bit"));
}

TEST(CheckHealth, MigInstanceThisProcessRunsOnIsNamed) {
  HealthObservation o = HealthyH200();
  o.mig_enabled = true;
  o.cuda_uuid = "GPU-0b1c2d3e-0000-1111-2222-333344445555";  // CUDA's spelling of the MIG UUID
  o.cuda_visible_devices = "MIG-0b1c2d3e-0000-1111-2222-333344445555";
  o.health.mig_instances = std::vector<gpu::NvmlMigInstance>{
      {"MIG-0b1c2d3e-0000-1111-2222-333344445555", 18 * kGiB}, {"MIG-99999999-0000-1111-2222-333344445555", 71 * kGiB}};
  Report r;
  CheckHealth(o, r);
  const Finding& f = Get(r, "health.mig");
  EXPECT_EQ(f.verdict, Verdict::kInfo);
  EXPECT_EQ(f.title, "this process runs on MIG instance MIG-0b1c2d3e-0000-1111-2222-333344445555");
  EXPECT_THAT(f.seen, HasSubstr("18.0 GiB of the GPU's 141.0 GiB"));
  EXPECT_EQ(f.facts.at("mig_instances"), "2");
}

TEST(CheckHealth, MigOnWithoutInstancesWarns) {
  HealthObservation o = HealthyH200();
  o.mig_enabled = true;
  o.health.mig_instances = std::vector<gpu::NvmlMigInstance>{};
  Report r;
  CheckHealth(o, r);
  EXPECT_EQ(Get(r, "health.mig").verdict, Verdict::kWarn);
  EXPECT_THAT(Get(r, "health.mig").fix, HasSubstr("mig -cgi"));
}

TEST(CheckHealth, OldDriverGivesNotCheckedWithTheReasonAndNeverFailsRequireGpu) {
  HealthObservation o;
  o.name = "Tesla T4";
  o.health.not_checked["persistence_mode"] = "/usr/lib/libnvidia-ml.so.1 lacks nvmlDeviceGetPersistenceMode (an older driver): not checked";
  o.health.not_checked["ecc"] = "nvmlDeviceGetEccMode: not supported on this GPU";
  o.load_skip_reason = "no usable GPU (driver layer)";
  o.copy_skip_reason = "libcuda lacks cuMemAllocHost_v2";
  Report r;
  CheckHealth(o, r);
  const Finding& p = Get(r, "health.persistence");
  EXPECT_EQ(p.verdict, Verdict::kSkip);
  EXPECT_EQ(p.title, "persistence mode not checked");
  EXPECT_THAT(p.seen, HasSubstr("lacks nvmlDeviceGetPersistenceMode"));
  EXPECT_FALSE(p.gpu);
  EXPECT_EQ(Get(r, "health.ecc").seen, "nvmlDeviceGetEccMode: not supported on this GPU");
  EXPECT_EQ(Get(r, "health.clocks").verdict, Verdict::kSkip);
  EXPECT_EQ(Get(r, "health.copy").seen, "libcuda lacks cuMemAllocHost_v2");
  EXPECT_EQ(r.ExitCode(/*require_gpu=*/true), 0);
}

TEST(CheckHealth, NoNvmlIsOneSkip) {
  HealthObservation o;
  o.skip_reason = "NVML unavailable (driver.nvml)";
  Report r;
  CheckHealth(o, r);
  ASSERT_EQ(r.findings().size(), 1u);
  EXPECT_EQ(r.findings()[0].id, "health.gpu");
  EXPECT_EQ(r.ExitCode(true), 0);
}

TEST(PcieLinkGbps, FollowsEachGenerationsEncoding) {
  EXPECT_DOUBLE_EQ(PcieLinkGbps(1, 16), 4.0);
  EXPECT_NEAR(PcieLinkGbps(3, 16), 15.75, 0.01);
  EXPECT_NEAR(PcieLinkGbps(4, 16), 31.5, 0.01);
  EXPECT_NEAR(PcieLinkGbps(5, 16), 63.0, 0.02);
  EXPECT_NEAR(PcieLinkGbps(5, 4), 15.75, 0.01);
  EXPECT_EQ(PcieLinkGbps(9, 16), 0);
}

}  // namespace
}  // namespace ortgpu::doctor
