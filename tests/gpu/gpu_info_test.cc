#include "gpu/gpu_info.h"

#include <unistd.h>

#include <cstdio>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_gpu_driver.h"
#include "gpu/compatibility.h"
#include "fakes/fake_nvml.h"

namespace ortgpu::gpu {
namespace {

using ::testing::HasSubstr;
using ::ortgpu::testing::FakeGpuDriver;
using ::ortgpu::testing::FakeNvml;

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;
constexpr const char* kH200Uuid = "GPU-5f1c2d3e-aaaa-bbbb-cccc-0123456789ab";

TEST(FormatCudaVersion, MajorDotMinor) {
  EXPECT_EQ(FormatCudaVersion(13000), "13.0");
  EXPECT_EQ(FormatCudaVersion(12080), "12.8");
  EXPECT_EQ(FormatCudaVersion(0), "unknown");
}

TEST(CudaErrors, CodeSurvivesTheStatusMessage) {
  Status s = CudaCallError("cuInit", 100, "no CUDA-capable device is detected");
  EXPECT_EQ(s.message(),
            "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected) [CUresult 100]");
  EXPECT_EQ(CudaErrorCodeOf(s), 100);
  EXPECT_EQ(CudaErrorCodeOf(NotFound("other")), 0);
}

TEST(NvmlErrorText, NamesTheCode) {
  EXPECT_THAT(NvmlErrorText(9), HasSubstr("NVML_ERROR_DRIVER_NOT_LOADED"));
  EXPECT_THAT(NvmlErrorText(18), HasSubstr("LIB_RM_VERSION_MISMATCH"));
  EXPECT_EQ(NvmlErrorText(4242), "NVML error 4242");
}

// This build machine has no NVIDIA driver: the real probes must fail with
// the loader's own text, not crash.
TEST(RealDriver, MissingLibraryReportsTheLoaderError) {
  auto driver = NewCudaDriver({.library = "libcuda-does-not-exist.so.1"});
  Status s = driver->Load();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cannot load libcuda-does-not-exist.so.1"));
  EXPECT_EQ(driver->LibraryPath(), "");
  EXPECT_FALSE(driver->DriverVersion().ok());

  auto nvml = NewNvml({.library = "libnvidia-ml-does-not-exist.so.1"});
  Status n = nvml->Load();
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.message(), HasSubstr("libnvidia-ml-does-not-exist.so.1"));
}

TEST(RealDriver, ALibraryWithoutCudaSymbolsIsRejected) {
  auto driver = NewCudaDriver({.library = "libm.so.6"});
  Status s = driver->Load();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("lacks the CUDA driver entry points cuInit"));
  EXPECT_THAT(s.message(), HasSubstr("/libm.so.6"));  // the resolved path from dlinfo
}

TEST(ProbeDriver, MergesCudaAndNvmlByUuid) {
  FakeGpuDriver driver;
  driver.AddDevice("NVIDIA H200", kH200Uuid, 9, 0, 141 * kGiB);
  FakeNvml nvml;
  NvmlDevice& n = nvml.AddDevice("NVIDIA H200", kH200Uuid, 9, 0, 141 * kGiB, 2 * kGiB);
  n.utilization_gpu = 37;
  auto info = ProbeDriver(driver, nvml);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->driver_version, "580.159.03");
  EXPECT_EQ(info->cuda_driver_version, 13000);
  EXPECT_EQ(info->libcuda_path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  ASSERT_EQ(info->devices.size(), 1u);
  const GpuDevice& d = info->devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.nvml_index, 0);
  EXPECT_EQ(d.ComputeCapability(), 90);
  EXPECT_EQ(d.memory_used, 2 * kGiB);
  EXPECT_EQ(d.utilization_gpu, 37u);
  EXPECT_EQ(d.pci_bus_id, "00000000:24:00.0");  // NVML's form wins
  EXPECT_TRUE(d.seen_by_cuda && d.seen_by_nvml);
}

TEST(ProbeDriver, GpuHiddenFromCudaStaysListedFromNvml) {
  FakeGpuDriver driver;
  driver.AddDevice("NVIDIA H200", kH200Uuid, 9, 0, 141 * kGiB);
  FakeNvml nvml;
  nvml.AddDevice("NVIDIA H200", "GPU-other", 9, 0, 141 * kGiB, 0);
  nvml.AddDevice("NVIDIA H200", kH200Uuid, 9, 0, 141 * kGiB, 0);
  auto info = ProbeDriver(driver, nvml);
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[0].nvml_index, 1);
  EXPECT_EQ(info->devices[1].index, -1);
  EXPECT_EQ(info->CudaDeviceCount(), 1);
}

TEST(ProbeDriver, WorksWithoutNvml) {
  FakeGpuDriver driver;
  driver.AddDevice("NVIDIA H200", kH200Uuid, 9, 0, 141 * kGiB);
  FakeNvml nvml;
  nvml.load_status = Unavailable("cannot load libnvidia-ml.so.1: not found");
  auto info = ProbeDriver(driver, nvml);
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->nvml_usable());
  EXPECT_TRUE(info->cuda_usable());
  EXPECT_EQ(info->devices.size(), 1u);
  EXPECT_FALSE(info->devices[0].memory_used.has_value());
}

TEST(ProbeDriver, NvmlAloneWhenCuInitFails) {
  FakeGpuDriver driver;
  driver.init_error = 100;
  FakeNvml nvml;
  nvml.AddDevice("NVIDIA H200", kH200Uuid, 9, 0, 141 * kGiB, 0);
  auto info = ProbeDriver(driver, nvml);
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->cuda_usable());
  EXPECT_EQ(CudaErrorCodeOf(info->cuda_init_status), 100);
  EXPECT_EQ(info->cuda_driver_version, 13000);  // known before cuInit
  ASSERT_EQ(info->devices.size(), 1u);
  EXPECT_EQ(info->devices[0].index, -1);
}

TEST(ProbeDriver, FailsWhenNeitherSourceLoads) {
  FakeGpuDriver driver;
  driver.load_status = Unavailable("cannot load libcuda.so.1: No such file");
  FakeNvml nvml;
  nvml.load_status = Unavailable("cannot load libnvidia-ml.so.1: No such file");
  auto info = ProbeDriver(driver, nvml);
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(info.status().message(), HasSubstr("libcuda.so.1"));
  EXPECT_THAT(info.status().message(), HasSubstr("libnvidia-ml.so.1"));
}

TEST(FormatBytes, GiBAndMiB) {
  EXPECT_EQ(FormatBytes(141 * kGiB), "141.0 GiB");
  EXPECT_EQ(FormatBytes(512ull * 1024 * 1024), "512 MiB");
}

}  // namespace
}  // namespace ortgpu::gpu

namespace ortgpu::gpu {
namespace {

// On a machine with an NVIDIA driver (the GPU test machine) this checks the
// hand-declared libcuda/NVML signatures and struct layouts against the real
// libraries; elsewhere it is skipped.
TEST(RealDriver, ProbesTheRealDriverWhenPresent) {
  auto driver = NewCudaDriver();
  auto nvml = NewNvml();
  DriverInfo info = ProbeDriverSources(*driver, *nvml);
  if (!info.cuda_load_status.ok()) GTEST_SKIP() << info.cuda_load_status.message();
  ASSERT_TRUE(info.cuda_init_status.ok()) << info.cuda_init_status.message();
  ASSERT_TRUE(info.nvml_status.ok()) << info.nvml_status.message();
  EXPECT_EQ(info.libcuda_path.front(), '/');
  EXPECT_GE(info.cuda_driver_version, 11000);
  ASSERT_TRUE(ParseVersion(info.driver_version).has_value()) << info.driver_version;
  ASSERT_FALSE(info.devices.empty());
  for (const GpuDevice& d : info.devices) {
    std::printf("GPU %d/%d %s %s pci=%s cc=%d total=%s used=%s util=%u mig=%d\n", d.index,
                d.nvml_index, d.name.c_str(), d.uuid.c_str(), d.pci_bus_id.c_str(),
                d.ComputeCapability(), FormatBytes(d.memory_total).c_str(),
                FormatBytes(d.memory_used.value_or(0)).c_str(), d.utilization_gpu.value_or(999),
                d.mig_enabled);
    EXPECT_TRUE(d.seen_by_cuda && d.seen_by_nvml) << "UUIDs must match across CUDA and NVML";
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u);
    EXPECT_EQ(d.uuid.size(), 40u);
    EXPECT_GE(d.ComputeCapability(), 50);
    EXPECT_GT(d.memory_total, 0u);
    ASSERT_TRUE(d.memory_used.has_value());
    EXPECT_LE(*d.memory_used, d.memory_total);
  }
  std::printf("libcuda=%s nvml=%s driver=%s cuda=%s\n", info.libcuda_path.c_str(),
              info.nvml_path.c_str(), info.driver_version.c_str(),
              FormatCudaVersion(info.cuda_driver_version).c_str());
  // This process holds no CUDA context, so NVML must not attribute memory to it.
  auto mine = nvml->ProcessMemoryUsed(0, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(mine.status().code(), Code::kNotFound) << mine.status().ToString();
}

TEST(SameDeviceUuid, MatchesCudasSpellingOfAMigInstance) {
  EXPECT_TRUE(SameDeviceUuid("GPU-0b1c2d3e-0000-1111-2222-333344445555", "MIG-0b1c2d3e-0000-1111-2222-333344445555"));
  EXPECT_FALSE(SameDeviceUuid("GPU-0b1c2d3e-0000-1111-2222-333344445555", "MIG-99999999-0000-1111-2222-333344445555"));
  EXPECT_FALSE(SameDeviceUuid("", ""));
}

}  // namespace
}  // namespace ortgpu::gpu
