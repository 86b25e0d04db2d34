#include "doctor/checks_driver.h"

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
constexpr const char* kUuid = "GPU-5f1c2d3e-aaaa-bbbb-cccc-0123456789ab";

HostSummary GpuHost() {
  HostSummary h;
  h.nvidia_nodes = {"/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidiactl"};
  h.gpu_node_count = 1;
  h.uvm_node_present = true;
  return h;
}

struct Machine {
  FakeGpuDriver driver;
  FakeNvml nvml;
  Machine(const std::string& name, int major, int minor, const std::string& driver_version) {
    driver.AddDevice(name, kUuid, major, minor, 24 * kGiB);
    nvml.AddDevice(name, kUuid, major, minor, 24 * kGiB, 1 * kGiB);
    nvml.driver_version = driver_version;
  }
};

TEST(CheckDriver, H200WithDriver580Passes) {
  Machine m("NVIDIA H200", 9, 0, "580.159.03");
  Report report;
  DriverFacts facts = CheckDriver(m.driver, m.nvml, GpuHost(), report);
  EXPECT_FALSE(report.HasFailure());
  EXPECT_TRUE(facts.gpu_usable);
  EXPECT_EQ(facts.driver_version, "580.159.03");
  EXPECT_EQ(facts.cuda_driver_version, 13000);
  EXPECT_EQ(facts.device_ccs, std::vector<int>{90});
  EXPECT_EQ(report.Find("driver.libcuda")->verdict, Verdict::kPass);
  EXPECT_THAT(report.Find("driver.version")->title, HasSubstr("supports CUDA up to 13.0"));
  const Finding* gpu = report.Find("driver.gpu.0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_THAT(gpu->seen, HasSubstr(kUuid));
  EXPECT_THAT(gpu->seen, HasSubstr("compute capability 9.0"));
  EXPECT_THAT(gpu->seen, HasSubstr("1.0 GiB used"));
  EXPECT_EQ(gpu->facts.at("pci_bus_id"), "00000000:24:00.0");
  for (const auto& f : report.findings()) EXPECT_TRUE(f.gpu) << f.id;
}

TEST(CheckDriver, Rtx4090WithDriver470Fails) {
  Machine m("NVIDIA GeForce RTX 4090", 8, 9, "470.256.02");
  m.driver.driver_version = 11040;
  Report report;
  DriverFacts facts = CheckDriver(m.driver, m.nvml, GpuHost(), report);
  const Finding* f = report.Find("driver.arch.0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->title, HasSubstr("too old for NVIDIA GeForce RTX 4090"));
  EXPECT_THAT(f->fix, HasSubstr("driver >= 520"));
  EXPECT_FALSE(facts.gpu_usable);
}

TEST(CheckDriver, NoLibcudaWithoutDeviceNodesIsSkip) {
  FakeGpuDriver driver;
  driver.load_status = Unavailable("cannot load libcuda.so.1: libcuda.so.1: cannot open shared "
                                   "object file: No such file or directory");
  FakeNvml nvml;
  nvml.load_status = Unavailable("cannot load libnvidia-ml.so.1: No such file or directory");
  Report report;
  DriverFacts facts = CheckDriver(driver, nvml, HostSummary{}, report);
  const Finding* f = report.Find("driver.libcuda");
  EXPECT_EQ(f->verdict, Verdict::kSkip);
  EXPECT_THAT(f->why, HasSubstr("no NVIDIA driver on this machine"));
  EXPECT_THAT(f->seen, HasSubstr("cannot open shared object file"));
  EXPECT_EQ(report.Find("driver.nvml")->verdict, Verdict::kSkip);
  EXPECT_FALSE(report.HasFailure());
  EXPECT_EQ(report.ExitCode(/*require_gpu=*/true), 1);
  EXPECT_FALSE(facts.gpu_usable);
}

TEST(CheckDriver, NoLibcudaButDeviceNodePresentFails) {
  FakeGpuDriver driver;
  driver.load_status = Unavailable("cannot load libcuda.so.1: No such file or directory");
  FakeNvml nvml;
  nvml.load_status = Unavailable("cannot load libnvidia-ml.so.1: No such file or directory");
  Report report;
  CheckDriver(driver, nvml, GpuHost(), report);
  const Finding* f = report.Find("driver.libcuda");
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->why, HasSubstr("/dev/nvidia0 exists"));
  EXPECT_THAT(f->fix, HasSubstr("install the NVIDIA driver"));
}

TEST(CheckDriver, NoLibcudaInContainerWithDeviceNodesPointsAtTheToolkit) {
  FakeGpuDriver driver;
  driver.load_status = Unavailable("cannot load libcuda.so.1: No such file or directory");
  FakeNvml nvml;
  nvml.load_status = Unavailable("cannot load libnvidia-ml.so.1: No such file or directory");
  HostSummary host = GpuHost();
  host.container = "docker";
  Report report;
  CheckDriver(driver, nvml, host, report);
  const Finding* f = report.Find("driver.libcuda");
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->fix, HasSubstr("--gpus all"));
}

TEST(CheckDriver, MigOnWarnsAboutMigUuids) {
  Machine m("NVIDIA H200", 9, 0, "580.159.03");
  m.nvml.devices[0].mig_current = true;
  Report report;
  CheckDriver(m.driver, m.nvml, GpuHost(), report);
  const Finding* f = report.Find("driver.gpu.0");
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_THAT(f->why, HasSubstr("MIG instance UUID (MIG-...)"));
  EXPECT_THAT(f->fix, HasSubstr("CUDA_VISIBLE_DEVICES=MIG-"));
  EXPECT_EQ(f->facts.at("mig"), "on");
}

TEST(CheckDriver, CuInitNoDeviceBlamesCudaVisibleDevices) {
  Machine m("NVIDIA H200", 9, 0, "580.159.03");
  m.driver.init_error = 100;
  HostSummary host = GpuHost();
  host.cuda_visible_devices = "-1";
  host.cuda_visible_devices_hides_all = true;
  Report report;
  DriverFacts facts = CheckDriver(m.driver, m.nvml, host, report);
  const Finding* f = report.Find("driver.cuinit");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->title, HasSubstr("CUDA_ERROR_NO_DEVICE"));
  EXPECT_THAT(f->fix, HasSubstr("unset CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(facts.gpu_usable);
  // NVML still describes the GPU.
  EXPECT_NE(report.Find("driver.gpu.nvml0"), nullptr);
}

TEST(CheckDriver, StubLibcudaIsNamed) {
  Machine m("NVIDIA H200", 9, 0, "580.159.03");
  m.driver.init_error = 34;
  m.driver.library_path = "/usr/local/cuda/lib64/stubs/libcuda.so.1";
  Report report;
  CheckDriver(m.driver, m.nvml, GpuHost(), report);
  const Finding* f = report.Find("driver.cuinit");
  EXPECT_THAT(f->why, HasSubstr("stub"));
  EXPECT_THAT(f->fix, HasSubstr("stubs"));
}

TEST(CheckDriver, CudaWithoutNvmlWarns) {
  Machine m("NVIDIA H200", 9, 0, "580.159.03");
  m.nvml.load_status = Unavailable("cannot load libnvidia-ml.so.1: No such file or directory");
  Report report;
  DriverFacts facts = CheckDriver(m.driver, m.nvml, GpuHost(), report);
  EXPECT_EQ(report.Find("driver.nvml")->verdict, Verdict::kWarn);
  EXPECT_TRUE(facts.gpu_usable);
  EXPECT_FALSE(report.HasFailure());
}

}  // namespace
}  // namespace ortgpu::doctor
