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

}  // namespace
}  // namespace ortgpu::gpu
