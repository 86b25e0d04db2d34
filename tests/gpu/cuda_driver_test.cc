#include "gpu/cuda_driver.h"

#include <cstdlib>
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

const std::string kLibcudaPath = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.82.07";

// A pretend libcuda: one H200. Signatures follow cuda.h as cuda_driver.cc
// declares them (CUresult and CUdevice are int).
struct FakeCuUuid {
  unsigned char bytes[16];
};
int FakeInit(unsigned int) { return 0; }
int FakeInitNoDevice(unsigned int) { return kCudaErrorNoDevice; }
int FakeDriverGetVersion(int* v) { *v = 13000; return 0; }
int FakeDeviceGetCount(int* n) { *n = 1; return 0; }
int FakeDeviceGet(int* dev, int ordinal) { *dev = ordinal; return 0; }
int FakeDeviceGetName(char* name, int len, int) { std::strncpy(name, "NVIDIA H200", len); return 0; }
int FakeDeviceGetUuidV2(FakeCuUuid* u, int) { std::memset(u->bytes, 0x22, sizeof(u->bytes)); return 0; }
int FakeDeviceGetUuidV1(FakeCuUuid* u, int) { std::memset(u->bytes, 0x11, sizeof(u->bytes)); return 0; }
int FakeDeviceGetPciBusId(char* bus, int len, int) { std::strncpy(bus, "0000:18:00.0", len); return 0; }
int FakeDeviceGetAttribute(int* v, int attr, int) { *v = attr == 75 ? 9 : 0; return 0; }
int FakeDeviceTotalMem(size_t* bytes, int) { *bytes = size_t{150} << 30; return 0; }
int FakeGetErrorString(int, const char** s) { *s = "no CUDA-capable device is detected"; return 0; }

FakeDynamicLoader::Library FullLibcuda() {
  return {kLibcudaPath,
          {{"cuInit", FakeDynamicLoader::Fn2Ptr(FakeInit)},
           {"cuDriverGetVersion", FakeDynamicLoader::Fn2Ptr(FakeDriverGetVersion)},
           {"cuDeviceGetCount", FakeDynamicLoader::Fn2Ptr(FakeDeviceGetCount)},
           {"cuDeviceGet", FakeDynamicLoader::Fn2Ptr(FakeDeviceGet)},
           {"cuDeviceGetName", FakeDynamicLoader::Fn2Ptr(FakeDeviceGetName)},
           {"cuDeviceGetUuid_v2", FakeDynamicLoader::Fn2Ptr(FakeDeviceGetUuidV2)},
           {"cuDeviceGetUuid", FakeDynamicLoader::Fn2Ptr(FakeDeviceGetUuidV1)},
           {"cuDeviceGetPCIBusId", FakeDynamicLoader::Fn2Ptr(FakeDeviceGetPciBusId)},
           {"cuDeviceGetAttribute", FakeDynamicLoader::Fn2Ptr(FakeDeviceGetAttribute)},
           {"cuDeviceTotalMem_v2", FakeDynamicLoader::Fn2Ptr(FakeDeviceTotalMem)}}};
}

// FullLibcuda() less the entry points `absent`.
FakeDynamicLoader::Library LibcudaWithout(const std::vector<std::string>& absent) {
  FakeDynamicLoader::Library lib = FullLibcuda();
  for (const auto& name : absent) lib.symbols.erase(name);
  return lib;
}

TEST(CudaDriverTest, LoadsLibcudaThroughTheLoaderAndReportsTheMappedFile) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libcuda.so.1", FullLibcuda());
  auto driver = NewCudaDriver({.loader = &loader});
  ASSERT_TRUE(driver->Load().ok());
  EXPECT_EQ(driver->LibraryPath(), kLibcudaPath);
  ASSERT_EQ(loader.calls().size(), 1u);
  EXPECT_EQ(loader.calls()[0].scope, SymbolScope::kLocal);
  EXPECT_EQ(driver->DriverVersion().value_or(0), 13000);
  ASSERT_TRUE(driver->Init().ok());
  EXPECT_EQ(driver->DeviceCount().value_or(0), 1);
  auto dev = driver->Device(0);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_EQ(dev->name, "NVIDIA H200");
  EXPECT_EQ(dev->pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(dev->cc_major, 9);
  // cuDeviceGetUuid_v2 is preferred when the driver has it.
  EXPECT_EQ(dev->uuid, "GPU-22222222-2222-2222-2222-222222222222");
}

TEST(CudaDriverTest, MissingEntryPointsNameTheLibraryAndEverySymbol) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libcuda.so.1", LibcudaWithout({"cuDeviceGetPCIBusId", "cuDeviceTotalMem_v2"}));
  auto driver = NewCudaDriver({.loader = &loader});
  const Status st = driver->Load();
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message(), kLibcudaPath +
                              " lacks the CUDA driver entry points cuDeviceGetPCIBusId, cuDeviceTotalMem_v2; it is "
                              "not a usable NVIDIA driver library (too old, or not libcuda)");
  EXPECT_EQ(driver->LibraryPath(), "");
  EXPECT_EQ(driver->DriverVersion().status().code(), Code::kFailedPrecondition);
}

TEST(CudaDriverTest, OldDriverWithoutUuidV2FallsBackToCuDeviceGetUuid) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libcuda.so.1", LibcudaWithout({"cuDeviceGetUuid_v2"}));
  auto driver = NewCudaDriver({.loader = &loader});
  ASSERT_TRUE(driver->Load().ok());
  ASSERT_TRUE(driver->Init().ok());
  EXPECT_EQ(driver->Device(0).value().uuid, "GPU-11111111-1111-1111-1111-111111111111");
}

TEST(CudaDriverTest, NeitherUuidEntryPointIsReportedAsCuDeviceGetUuid) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libcuda.so.1", LibcudaWithout({"cuDeviceGetUuid_v2", "cuDeviceGetUuid"}));
  const Status st = NewCudaDriver({.loader = &loader})->Load();
  EXPECT_THAT(st.message(), HasSubstr("lacks the CUDA driver entry points cuDeviceGetUuid;"));
}

TEST(CudaDriverTest, OpenFailureCarriesTheLoadersText) {
  FakeDynamicLoader loader;
  loader.FailOpen("libcuda.so.1", "libcuda.so.1: cannot open shared object file: No such file or directory");
  const Status st = NewCudaDriver({.loader = &loader})->Load();
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message(),
            "cannot load libcuda.so.1: libcuda.so.1: cannot open shared object file: No such file or directory");
}

TEST(CudaDriverTest, FailedCallUsesTheDriversOwnDescriptionWhenPresent) {
  FakeDynamicLoader loader;
  auto lib = FullLibcuda();
  lib.symbols["cuInit"] = FakeDynamicLoader::Fn2Ptr(FakeInitNoDevice);
  lib.symbols["cuGetErrorString"] = FakeDynamicLoader::Fn2Ptr(FakeGetErrorString);
  loader.AddLibrary("libcuda.so.1", lib);
  auto driver = NewCudaDriver({.loader = &loader});
  ASSERT_TRUE(driver->Load().ok());
  const Status st = driver->Init();
  EXPECT_THAT(st.message(), HasSubstr("cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"));
  EXPECT_EQ(CudaErrorCodeOf(st), kCudaErrorNoDevice);
}

// The copy test's entry points over host memory: a "device pointer" is a
// host address, so the copies really move bytes and the test can check
// that each buffer was freed and the context popped.
int g_allocs = 0, g_host_allocs = 0, g_pushes = 0, g_pops = 0, g_retains = 0;
size_t g_h2d_bytes = 0;
int FakeRetain(void** ctx, int) { ++g_retains; *ctx = &g_retains; return 0; }
int FakePush(void*) { ++g_pushes; return 0; }
int FakePop(void** ctx) { ++g_pops; *ctx = &g_retains; return 0; }
int FakeSync() { return 0; }
int FakeMemAlloc(unsigned long long* p, size_t n) { ++g_allocs; *p = reinterpret_cast<unsigned long long>(std::malloc(n)); return 0; }
int FakeMemAllocOom(unsigned long long*, size_t) { return 2; }  // CUDA_ERROR_OUT_OF_MEMORY
int FakeMemFree(unsigned long long p) { --g_allocs; std::free(reinterpret_cast<void*>(p)); return 0; }
int FakeMemAllocHost(void** p, size_t n) { ++g_host_allocs; *p = std::malloc(n); return 0; }
int FakeMemFreeHost(void* p) { --g_host_allocs; std::free(p); return 0; }
int FakeHtoD(unsigned long long d, const void* h, size_t n) { g_h2d_bytes += n; std::memcpy(reinterpret_cast<void*>(d), h, n); return 0; }
int FakeDtoH(void* h, unsigned long long d, size_t n) { std::memcpy(h, reinterpret_cast<void*>(d), n); return 0; }

FakeDynamicLoader::Library LibcudaWithCopies() {
  FakeDynamicLoader::Library lib = FullLibcuda();
  lib.symbols["cuDevicePrimaryCtxRetain"] = FakeDynamicLoader::Fn2Ptr(FakeRetain);
  lib.symbols["cuCtxPushCurrent_v2"] = FakeDynamicLoader::Fn2Ptr(FakePush);
  lib.symbols["cuCtxPopCurrent_v2"] = FakeDynamicLoader::Fn2Ptr(FakePop);
  lib.symbols["cuCtxSynchronize"] = FakeDynamicLoader::Fn2Ptr(FakeSync);
  lib.symbols["cuMemAlloc_v2"] = FakeDynamicLoader::Fn2Ptr(FakeMemAlloc);
  lib.symbols["cuMemFree_v2"] = FakeDynamicLoader::Fn2Ptr(FakeMemFree);
  lib.symbols["cuMemAllocHost_v2"] = FakeDynamicLoader::Fn2Ptr(FakeMemAllocHost);
  lib.symbols["cuMemFreeHost"] = FakeDynamicLoader::Fn2Ptr(FakeMemFreeHost);
  lib.symbols["cuMemcpyHtoD_v2"] = FakeDynamicLoader::Fn2Ptr(FakeHtoD);
  lib.symbols["cuMemcpyDtoH_v2"] = FakeDynamicLoader::Fn2Ptr(FakeDtoH);
  return lib;
}

TEST(CudaDriverTest, CopyTestTimesEveryKindAndFreesWhatItAllocated) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libcuda.so.1", LibcudaWithCopies());
  auto driver = NewCudaDriver({.loader = &loader});
  ASSERT_TRUE(driver->Load().ok());
  ASSERT_TRUE(driver->Init().ok());
  g_allocs = g_host_allocs = g_pushes = g_pops = g_retains = 0;
  g_h2d_bytes = 0;
  const auto copies = driver->MeasureCopyBandwidth(0, {.bytes = 1 << 20, .repetitions = 2});
  ASSERT_TRUE(copies.ok()) << copies.status().message();
  EXPECT_EQ(copies->bytes, 1u << 20);
  EXPECT_EQ(copies->repetitions, 2);
  for (double gbps : {copies->pinned_h2d, copies->pinned_d2h, copies->pageable_h2d, copies->pageable_d2h}) {
    EXPECT_GT(gbps, 0);
  }
  // One untimed and two timed copies from pinned and from pageable memory.
  EXPECT_EQ(g_h2d_bytes, size_t{6} << 20);
  EXPECT_EQ(g_allocs, 0);
  EXPECT_EQ(g_host_allocs, 0);
  EXPECT_EQ(g_pushes, 1);
  EXPECT_EQ(g_pops, 1);
  EXPECT_EQ(g_retains, 1);  // kept for ORT: never released
}

TEST(CudaDriverTest, CopyTestOutOfMemoryNamesTheCallAndLeavesTheContext) {
  FakeDynamicLoader loader;
  auto lib = LibcudaWithCopies();
  lib.symbols["cuMemAlloc_v2"] = FakeDynamicLoader::Fn2Ptr(FakeMemAllocOom);
  loader.AddLibrary("libcuda.so.1", lib);
  auto driver = NewCudaDriver({.loader = &loader});
  ASSERT_TRUE(driver->Load().ok());
  ASSERT_TRUE(driver->Init().ok());
  g_pushes = g_pops = 0;
  const auto copies = driver->MeasureCopyBandwidth(0, {});
  EXPECT_THAT(copies.status().message(), HasSubstr("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_EQ(g_pops, g_pushes);
}

TEST(CudaDriverTest, OldLibcudaWithoutCopyEntryPointsLoadsAndSaysTheTestCannotRun) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libcuda.so.1", FullLibcuda());
  auto driver = NewCudaDriver({.loader = &loader});
  ASSERT_TRUE(driver->Load().ok());
  ASSERT_TRUE(driver->Init().ok());
  const auto copies = driver->MeasureCopyBandwidth(0, {});
  EXPECT_EQ(copies.status().code(), Code::kUnimplemented);
  EXPECT_THAT(copies.status().message(), HasSubstr("lacks cuDevicePrimaryCtxRetain"));
}

}  // namespace
}  // namespace ortgpu::gpu
