#include "gpu/nvml.h"

#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_dynamic_loader.h"

namespace ortgpu::gpu {
namespace {

using ::testing::HasSubstr;
using testing::FakeDynamicLoader;

const std::string kNvmlPath = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.82.07";

// A pretend libnvidia-ml. Signatures follow nvml.h as nvml.cc declares them
// (nvmlReturn_t is int, nvmlDevice_t an opaque pointer).
int g_shutdowns = 0;
int FakeInit() { return 0; }
int FakeInitDriverNotLoaded() { return kNvmlErrorDriverNotLoaded; }
int FakeShutdown() { ++g_shutdowns; return 0; }
const char* FakeErrorString(int) { return "fake"; }
int FakeDriverVersion(char* buf, unsigned int len) { std::strncpy(buf, "580.82.07", len); return 0; }
int FakeCudaDriverVersion(int* v) { *v = 13000; return 0; }
int FakeDeviceCount(unsigned int* n) { *n = 1; return 0; }
int FakeHandleByIndex(unsigned int, void** h) { *h = reinterpret_cast<void*>(0x1); return 0; }
int NotCalled() { return 999; }

// Every entry point nvml.cc requires; those a test does not call resolve to
// NotCalled.
const std::vector<std::string> kRequiredNvmlSymbols = {
    "nvmlInit_v2", "nvmlShutdown", "nvmlErrorString", "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetCudaComputeCapability"};

// A driver 580 libnvidia-ml without the optional entry points, less `absent`.
FakeDynamicLoader::Library NvmlWithout(const std::vector<std::string>& absent = {}) {
  FakeDynamicLoader::Library lib{kNvmlPath, {}};
  for (const auto& name : kRequiredNvmlSymbols) lib.symbols[name] = FakeDynamicLoader::Fn2Ptr(NotCalled);
  lib.symbols["nvmlInit_v2"] = FakeDynamicLoader::Fn2Ptr(FakeInit);
  lib.symbols["nvmlShutdown"] = FakeDynamicLoader::Fn2Ptr(FakeShutdown);
  lib.symbols["nvmlErrorString"] = FakeDynamicLoader::Fn2Ptr(FakeErrorString);
  lib.symbols["nvmlSystemGetDriverVersion"] = FakeDynamicLoader::Fn2Ptr(FakeDriverVersion);
  lib.symbols["nvmlSystemGetCudaDriverVersion_v2"] = FakeDynamicLoader::Fn2Ptr(FakeCudaDriverVersion);
  lib.symbols["nvmlDeviceGetCount_v2"] = FakeDynamicLoader::Fn2Ptr(FakeDeviceCount);
  lib.symbols["nvmlDeviceGetHandleByIndex_v2"] = FakeDynamicLoader::Fn2Ptr(FakeHandleByIndex);
  for (const auto& name : absent) lib.symbols.erase(name);
  return lib;
}

TEST(NvmlTest, LoadsThroughTheLoaderInitsAndShutsDownOnce) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libnvidia-ml.so.1", NvmlWithout());
  g_shutdowns = 0;
  {
    auto nvml = NewNvml({.loader = &loader});
    ASSERT_TRUE(nvml->Load().ok());
    EXPECT_EQ(nvml->LibraryPath(), kNvmlPath);
    EXPECT_EQ(nvml->DriverVersion().value_or(""), "580.82.07");
    EXPECT_EQ(nvml->CudaDriverVersion().value_or(0), 13000);
    EXPECT_EQ(nvml->DeviceCount().value_or(0), 1u);
  }
  EXPECT_EQ(g_shutdowns, 1);
}

TEST(NvmlTest, MissingEntryPointsNameTheLibraryAndEverySymbol) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libnvidia-ml.so.1",
                    NvmlWithout({"nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetMemoryInfo"}));
  g_shutdowns = 0;
  {
    auto nvml = NewNvml({.loader = &loader});
    EXPECT_EQ(nvml->Load().message(),
              kNvmlPath + " lacks the NVML entry points nvmlSystemGetCudaDriverVersion_v2, nvmlDeviceGetMemoryInfo;"
                          " the NVIDIA driver is too old for ortgpu (install driver >= 525)");
    // Nothing is usable after the failure: every query says Load() first.
    EXPECT_EQ(nvml->DeviceCount().status().code(), Code::kFailedPrecondition);
  }
  EXPECT_EQ(g_shutdowns, 0);  // never initialised, so never shut down
}

TEST(NvmlTest, OpenFailureCarriesTheLoadersText) {
  FakeDynamicLoader loader;
  loader.FailOpen("libnvidia-ml.so.1", "libnvidia-ml.so.1: cannot open shared object file: No such file or directory");
  const Status st = NewNvml({.loader = &loader})->Load();
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message(), "cannot load libnvidia-ml.so.1: libnvidia-ml.so.1: cannot open shared object file: No "
                          "such file or directory");
}

TEST(NvmlTest, InitFailureNamesTheNvmlError) {
  FakeDynamicLoader loader;
  auto lib = NvmlWithout();
  lib.symbols["nvmlInit_v2"] = FakeDynamicLoader::Fn2Ptr(FakeInitDriverNotLoaded);
  loader.AddLibrary("libnvidia-ml.so.1", lib);
  const Status st = NewNvml({.loader = &loader})->Load();
  EXPECT_EQ(st.message(), "nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (NVIDIA driver is not loaded)");
}

TEST(NvmlTest, DriverWithoutProcessListSaysSoInsteadOfFailingToLoad) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libnvidia-ml.so.1", NvmlWithout());  // no nvmlDeviceGetComputeRunningProcesses_v3
  auto nvml = NewNvml({.loader = &loader});
  ASSERT_TRUE(nvml->Load().ok());
  const auto used = nvml->ProcessMemoryUsed(0, 1234);
  EXPECT_EQ(used.status().code(), Code::kUnavailable);
  EXPECT_THAT(used.status().message(), HasSubstr(kNvmlPath + " lacks nvmlDeviceGetComputeRunningProcesses_v3"));
}

// Health entry points of a driver-580 H200 (nvml.h signatures; enums are int).
int FakeName(void*, char* buf, unsigned int len) { std::strncpy(buf, "NVIDIA H200", len); return 0; }
int FakeUuid(void* h, char* buf, unsigned int len) {
  std::strncpy(buf, h == reinterpret_cast<void*>(0x1) ? "GPU-aaaa" : "MIG-bbbb", len);
  return 0;
}
int FakeMemory(void*, unsigned long long* m) { m[0] = 18ull << 30; m[1] = 16ull << 30; m[2] = 2ull << 30; return 0; }
int FakePersistenceOn(void*, int* mode) { *mode = 1; return 0; }
int FakeComputeExclusive(void*, int* mode) { *mode = kNvmlComputeModeExclusiveProcess; return 0; }
int FakeEccOn(void*, int* cur, int* pending) { *cur = 1; *pending = 1; return 0; }
int FakeTotalEcc(void*, int type, int counter, unsigned long long* n) { *n = type == 1 ? (counter == 0 ? 2 : 5) : 0; return 0; }
int FakeRetiredNotSupported(void*, int, unsigned int*, unsigned long long*) { return kNvmlErrorNotSupported; }
int FakeRemappedRows(void*, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  *corr = 0; *unc = 1; *pending = 1; *failure = 0;
  return 0;
}
int FakePcieGen(void*, unsigned* v) { *v = 4; return 0; }
int FakePcieGenMax(void*, unsigned* v) { *v = 5; return 0; }
int FakePcieWidth(void*, unsigned* v) { *v = 4; return 0; }
int FakePcieWidthMax(void*, unsigned* v) { *v = 16; return 0; }
int FakeMigModeOn(void*, unsigned* cur, unsigned* pending) { *cur = 1; *pending = 1; return 0; }
int FakeMaxMig(void*, unsigned* n) { *n = 7; return 0; }
int FakeMigHandle(void*, unsigned index, void** h) {
  if (index != 2) return 6;  // NVML_ERROR_NOT_FOUND: an empty slot
  *h = reinterpret_cast<void*>(0x2);
  return 0;
}
int FakeProcesses(void*, unsigned* count, void* infos) {
  struct Info { unsigned pid; unsigned long long used; unsigned gi, ci; };
  if (*count < 1) { *count = 1; return kNvmlErrorInsufficientSize; }
  auto* p = static_cast<Info*>(infos);
  p[0] = {4242, 3ull << 30, 0, 0};
  *count = 1;
  return 0;
}
int FakeProcessName(unsigned, char* buf, unsigned len) { std::strncpy(buf, "tritonserver", len); return 0; }
int FakeEventReasons(void*, unsigned long long* r) { *r = kClocksEventSwPowerCap; return 0; }
int FakeClock(void*, int type, unsigned* mhz) { *mhz = type == 1 ? 1500 : 0; return 0; }
int FakeMaxClock(void*, int, unsigned* mhz) { *mhz = 1980; return 0; }

TEST(NvmlTest, HealthReadsEveryQueryAndSaysWhyEachMissingOneWasNotChecked) {
  FakeDynamicLoader loader;
  auto lib = NvmlWithout();
  lib.symbols["nvmlDeviceGetName"] = FakeDynamicLoader::Fn2Ptr(FakeName);
  lib.symbols["nvmlDeviceGetUUID"] = FakeDynamicLoader::Fn2Ptr(FakeUuid);
  lib.symbols["nvmlDeviceGetMemoryInfo"] = FakeDynamicLoader::Fn2Ptr(FakeMemory);
  lib.symbols["nvmlDeviceGetPersistenceMode"] = FakeDynamicLoader::Fn2Ptr(FakePersistenceOn);
  lib.symbols["nvmlDeviceGetComputeMode"] = FakeDynamicLoader::Fn2Ptr(FakeComputeExclusive);
  lib.symbols["nvmlDeviceGetEccMode"] = FakeDynamicLoader::Fn2Ptr(FakeEccOn);
  lib.symbols["nvmlDeviceGetTotalEccErrors"] = FakeDynamicLoader::Fn2Ptr(FakeTotalEcc);
  lib.symbols["nvmlDeviceGetRetiredPages"] = FakeDynamicLoader::Fn2Ptr(FakeRetiredNotSupported);
  lib.symbols["nvmlDeviceGetRemappedRows"] = FakeDynamicLoader::Fn2Ptr(FakeRemappedRows);
  lib.symbols["nvmlDeviceGetCurrPcieLinkGeneration"] = FakeDynamicLoader::Fn2Ptr(FakePcieGen);
  lib.symbols["nvmlDeviceGetMaxPcieLinkGeneration"] = FakeDynamicLoader::Fn2Ptr(FakePcieGenMax);
  lib.symbols["nvmlDeviceGetCurrPcieLinkWidth"] = FakeDynamicLoader::Fn2Ptr(FakePcieWidth);
  lib.symbols["nvmlDeviceGetMaxPcieLinkWidth"] = FakeDynamicLoader::Fn2Ptr(FakePcieWidthMax);
  lib.symbols["nvmlDeviceGetMigMode"] = FakeDynamicLoader::Fn2Ptr(FakeMigModeOn);
  lib.symbols["nvmlDeviceGetMaxMigDeviceCount"] = FakeDynamicLoader::Fn2Ptr(FakeMaxMig);
  lib.symbols["nvmlDeviceGetMigDeviceHandleByIndex"] = FakeDynamicLoader::Fn2Ptr(FakeMigHandle);
  lib.symbols["nvmlDeviceGetComputeRunningProcesses_v3"] = FakeDynamicLoader::Fn2Ptr(FakeProcesses);
  lib.symbols["nvmlSystemGetProcessName"] = FakeDynamicLoader::Fn2Ptr(FakeProcessName);
  loader.AddLibrary("libnvidia-ml.so.1", lib);
  auto nvml = NewNvml({.loader = &loader});
  ASSERT_TRUE(nvml->Load().ok());
  const auto h = nvml->Health(0);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->persistence_mode, true);
  EXPECT_EQ(h->compute_mode, kNvmlComputeModeExclusiveProcess);
  EXPECT_EQ(h->ecc_uncorrected_volatile, 2u);
  EXPECT_EQ(h->ecc_uncorrected_aggregate, 5u);
  EXPECT_FALSE(h->retired_pages_dbe.has_value());
  EXPECT_EQ(h->not_checked.at("retired_pages"), "nvmlDeviceGetRetiredPages: not supported on this GPU");
  EXPECT_EQ(h->remapped_rows_uncorrectable, 1u);
  EXPECT_EQ(h->row_remap_pending, true);
  EXPECT_EQ(h->pcie_gen, 4u);
  EXPECT_EQ(h->pcie_width_max, 16u);
  // r510's GPU-own maximum is absent from this library.
  EXPECT_FALSE(h->pcie_gen_gpu_max.has_value());
  EXPECT_THAT(h->not_checked.at("pcie_gpu_max"), HasSubstr("lacks nvmlDeviceGetGpuMaxPcieLinkGeneration"));
  ASSERT_TRUE(h->mig_instances.has_value());
  ASSERT_EQ(h->mig_instances->size(), 1u);
  EXPECT_EQ(h->mig_instances->at(0).uuid, "MIG-bbbb");
  EXPECT_EQ(h->mig_instances->at(0).memory_total, 18ull << 30);
  EXPECT_EQ(h->mig_instances->at(0).memory_free, 16ull << 30) << "the instance's own free memory";
  EXPECT_EQ(h->mig_instances->at(0).memory_used, 2ull << 30);
  ASSERT_TRUE(h->processes.has_value());
  ASSERT_EQ(h->processes->size(), 1u);
  EXPECT_EQ(h->processes->at(0).pid, 4242u);
  EXPECT_EQ(h->processes->at(0).name, "tritonserver");
  EXPECT_EQ(h->processes->at(0).used_memory, 3ull << 30);
}

TEST(NvmlTest, OldDriverWithoutHealthEntryPointsGivesNotCheckedNeverAnError) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libnvidia-ml.so.1", NvmlWithout());
  auto nvml = NewNvml({.loader = &loader});
  ASSERT_TRUE(nvml->Load().ok());
  const auto h = nvml->Health(0);
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->persistence_mode.has_value());
  EXPECT_FALSE(h->ecc_current.has_value());
  EXPECT_THAT(h->not_checked.at("persistence_mode"), HasSubstr("lacks nvmlDeviceGetPersistenceMode (an older driver)"));
  EXPECT_THAT(h->not_checked.at("compute_mode"), HasSubstr("lacks nvmlDeviceGetComputeMode"));
  EXPECT_THAT(h->not_checked.at("processes"), HasSubstr("lacks nvmlDeviceGetComputeRunningProcesses_v3"));
  const auto s = nvml->SampleClocks(0);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->event_reasons.has_value());
  EXPECT_THAT(s->not_checked.at("clock_event_reasons"), HasSubstr("lacks nvmlDeviceGetCurrentClocksEventReasons"));
}

TEST(NvmlTest, ClockSampleReadsEventReasonsAndTheSmClock) {
  FakeDynamicLoader loader;
  auto lib = NvmlWithout();
  lib.symbols["nvmlDeviceGetCurrentClocksEventReasons"] = FakeDynamicLoader::Fn2Ptr(FakeEventReasons);
  lib.symbols["nvmlDeviceGetClockInfo"] = FakeDynamicLoader::Fn2Ptr(FakeClock);
  lib.symbols["nvmlDeviceGetMaxClockInfo"] = FakeDynamicLoader::Fn2Ptr(FakeMaxClock);
  loader.AddLibrary("libnvidia-ml.so.1", lib);
  auto nvml = NewNvml({.loader = &loader});
  ASSERT_TRUE(nvml->Load().ok());
  const auto s = nvml->SampleClocks(0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->event_reasons, kClocksEventSwPowerCap);
  EXPECT_EQ(s->sm_clock_mhz, 1500u);
  EXPECT_EQ(s->sm_clock_max_mhz, 1980u);
}

int FakeThrottleReasons(void*, unsigned long long* r) { *r = kClocksEventHwSlowdown; return 0; }
int FakeRetiredPages(void*, int cause, unsigned* count, unsigned long long*) {
  // NVML reports the count through INSUFFICIENT_SIZE when the buffer is too small.
  *count = cause == 1 ? 2 : 0;
  return *count > 0 ? kNvmlErrorInsufficientSize : 0;
}
int FakeRetiredPending(void*, int* pending) { *pending = 1; return 0; }

TEST(NvmlTest, DriverBeforeR535ReportsThrottleReasonsUnderTheirOldName) {
  FakeDynamicLoader loader;
  auto lib = NvmlWithout();
  lib.symbols["nvmlDeviceGetCurrentClocksThrottleReasons"] = FakeDynamicLoader::Fn2Ptr(FakeThrottleReasons);
  loader.AddLibrary("libnvidia-ml.so.1", lib);
  auto nvml = NewNvml({.loader = &loader});
  ASSERT_TRUE(nvml->Load().ok());
  EXPECT_EQ(nvml->SampleClocks(0)->event_reasons, kClocksEventHwSlowdown);
}

TEST(NvmlTest, RetiredPagesOfAPreAmpereGpuAreCounted) {
  FakeDynamicLoader loader;
  auto lib = NvmlWithout();
  lib.symbols["nvmlDeviceGetRetiredPages"] = FakeDynamicLoader::Fn2Ptr(FakeRetiredPages);
  lib.symbols["nvmlDeviceGetRetiredPagesPendingStatus"] = FakeDynamicLoader::Fn2Ptr(FakeRetiredPending);
  loader.AddLibrary("libnvidia-ml.so.1", lib);
  auto nvml = NewNvml({.loader = &loader});
  ASSERT_TRUE(nvml->Load().ok());
  const auto h = nvml->Health(0);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->retired_pages_dbe, 2u);
  EXPECT_EQ(h->retired_pages_sbe, 0u);
  EXPECT_EQ(h->retired_pages_pending, true);
}

}  // namespace
}  // namespace ortgpu::gpu
