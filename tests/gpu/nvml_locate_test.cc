#include "gpu/nvml_locate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_nvml.h"

namespace ortgpu::gpu {
namespace {

using ::ortgpu::testing::FakeNvml;
using ::testing::HasSubstr;

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;
constexpr const char* kGpu0 = "GPU-5f1c2d3e-aaaa-bbbb-cccc-000000000000";
constexpr const char* kGpu1 = "GPU-5f1c2d3e-aaaa-bbbb-cccc-111111111111";
// A MIG instance of GPU 1 as NVML names it, and as CUDA prints it.
constexpr const char* kMigNvml = "MIG-0b1c2d3e-0000-1111-2222-333344445555";
constexpr const char* kMigCuda = "GPU-0b1c2d3e-0000-1111-2222-333344445555";

// Two H200s, the second in MIG mode with a 1g.18gb and a 3g.71gb instance.
FakeNvml TwoGpusOneInMigMode() {
  FakeNvml nvml;
  nvml.AddDevice("NVIDIA H200", kGpu0, 9, 0, 141 * kGiB, 1 * kGiB).mig_current = false;
  nvml.AddDevice("NVIDIA H200", kGpu1, 9, 0, 141 * kGiB, 30 * kGiB);
  nvml.AddMigInstance(1, kMigNvml, 18 * kGiB, 2 * kGiB);
  nvml.AddMigInstance(1, "MIG-99999999-0000-1111-2222-333344445555", 71 * kGiB, 0);
  EXPECT_TRUE(nvml.Load().ok());
  return nvml;
}

TEST(LocateByUuid, FindsAWholeGpuByCudasUuid) {
  FakeNvml nvml = TwoGpusOneInMigMode();
  auto place = LocateByUuid(nvml, kGpu1);
  ASSERT_TRUE(place.ok()) << place.status().message();
  EXPECT_EQ(place->index, 1u);
  EXPECT_FALSE(place->mig.has_value());
  auto memory = MemoryAt(nvml, *place);
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(memory->total, 141 * kGiB) << "a whole GPU: its own memory";
}

TEST(LocateByUuid, FindsAMigInstanceByTheUuidCudaPrintsForIt) {
  FakeNvml nvml = TwoGpusOneInMigMode();
  auto place = LocateByUuid(nvml, kMigCuda);
  ASSERT_TRUE(place.ok()) << place.status().message();
  EXPECT_EQ(place->index, 1u) << "the instance's GPU";
  ASSERT_TRUE(place->mig.has_value());
  EXPECT_EQ(place->mig->uuid, kMigNvml);
  auto memory = MemoryAt(nvml, *place);
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  EXPECT_EQ(memory->total, 18 * kGiB) << "the instance's slice, not the GPU's 141 GiB";
  EXPECT_EQ(memory->free, 16 * kGiB);
  EXPECT_EQ(memory->used, 2 * kGiB);
}

TEST(LocateByUuid, UnknownUuidIsNotFound) {
  FakeNvml nvml = TwoGpusOneInMigMode();
  auto place = LocateByUuid(nvml, "GPU-deadbeef-0000-0000-0000-000000000000");
  ASSERT_FALSE(place.ok());
  EXPECT_EQ(place.status().code(), Code::kNotFound);
  EXPECT_THAT(place.status().message(), HasSubstr("GPU-deadbeef"));
  EXPECT_THAT(place.status().message(), HasSubstr("2 GPUs listed"));
  EXPECT_EQ(LocateByUuid(nvml, "").status().code(), Code::kNotFound);
}

TEST(MemoryAt, AMigInstanceNoLongerListedIsNotFound) {
  FakeNvml nvml = TwoGpusOneInMigMode();
  auto place = LocateByUuid(nvml, kMigCuda);
  ASSERT_TRUE(place.ok());
  nvml.health[1].mig_instances->erase(nvml.health[1].mig_instances->begin());
  EXPECT_EQ(MemoryAt(nvml, *place).status().code(), Code::kNotFound);
  nvml.health[1].mig_instances.reset();
  nvml.health[1].not_checked["mig_instances"] = "nvmlDeviceGetMaxMigDeviceCount: not supported";
  auto memory = MemoryAt(nvml, *place);
  EXPECT_EQ(memory.status().code(), Code::kUnavailable);
  EXPECT_THAT(memory.status().message(), HasSubstr("nvmlDeviceGetMaxMigDeviceCount"));
}

}  // namespace
}  // namespace ortgpu::gpu
