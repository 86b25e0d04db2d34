#include "doctor/checks_host.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_environment.h"
#include "fakes/fake_file_system.h"

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;
using ::ortgpu::testing::FakeEnvironment;
using ::ortgpu::testing::FakeFileSystem;

HostFacts Facts() { return {"6.8.0-45-generic", "x86_64", "2.39", 16}; }

void AddGpuNodes(FakeFileSystem& fs, int gpus) {
  fs.AddFile("/dev/nvidiactl");
  fs.AddFile("/dev/nvidia-uvm");
  for (int i = 0; i < gpus; ++i) fs.AddFile("/dev/nvidia" + std::to_string(i));
}

TEST(CheckHost, ReportsOsKernelGlibcAndCores) {
  FakeFileSystem fs;
  fs.AddFile("/etc/os-release", "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\n");
  FakeEnvironment env;
  Report report;
  CheckHost({fs, env, Facts()}, report);
  ASSERT_NE(report.Find("host.os"), nullptr);
  EXPECT_EQ(report.Find("host.os")->title, "Ubuntu 24.04.1 LTS");
  EXPECT_THAT(report.Find("host.kernel")->seen, HasSubstr("6.8.0-45-generic"));
  EXPECT_EQ(report.Find("host.glibc")->facts.at("glibc"), "2.39");
  EXPECT_EQ(report.Find("host.cpu")->facts.at("cpu_cores"), "16");
  EXPECT_EQ(report.Find("host.container")->facts.at("container"), "");
}

TEST(CheckHost, OldGlibcWarns) {
  FakeFileSystem fs;
  FakeEnvironment env;
  Report report;
  CheckHost({fs, env, {"3.10.0", "x86_64", "2.17", 4}}, report);
  EXPECT_EQ(report.Find("host.glibc")->verdict, Verdict::kWarn);
}

TEST(CheckHost, GpuMachineHasDeviceNodes) {
  FakeFileSystem fs;
  AddGpuNodes(fs, 2);
  FakeEnvironment env;
  Report report;
  HostSummary s = CheckHost({fs, env, Facts()}, report);
  EXPECT_EQ(s.gpu_node_count, 2);
  EXPECT_TRUE(s.uvm_node_present);
  const Finding* f = report.Find("host.device_nodes");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kPass);
  EXPECT_THAT(f->seen, HasSubstr("/dev/nvidia0"));
  EXPECT_TRUE(f->gpu);
}

TEST(CheckHost, MissingUvmNodeWarnsWithModprobe) {
  FakeFileSystem fs;
  fs.AddFile("/dev/nvidiactl");
  fs.AddFile("/dev/nvidia0");
  FakeEnvironment env;
  Report report;
  CheckHost({fs, env, Facts()}, report);
  const Finding* f = report.Find("host.device_nodes");
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_THAT(f->fix, HasSubstr("modprobe nvidia-uvm"));
}

TEST(CheckHost, CpuOnlyMachineIsSkipNotFail) {
  FakeFileSystem fs;
  fs.AddDirectory("/dev");
  FakeEnvironment env;
  Report report;
  CheckHost({fs, env, Facts()}, report);
  const Finding* f = report.Find("host.device_nodes");
  EXPECT_EQ(f->verdict, Verdict::kSkip);
  EXPECT_THAT(f->why, HasSubstr("no NVIDIA driver on this machine"));
  EXPECT_FALSE(report.HasFailure());
}

TEST(CheckHost, DockerContainerWithoutGpuGetsTheDockerAndKubernetesFix) {
  FakeFileSystem fs;
  fs.AddFile("/.dockerenv");
  fs.AddDirectory("/dev");
  FakeEnvironment env;
  Report report;
  HostSummary s = CheckHost({fs, env, Facts()}, report);
  EXPECT_EQ(s.container, "docker");
  const Finding* f = report.Find("host.device_nodes");
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_THAT(f->title, HasSubstr("docker container"));
  EXPECT_THAT(f->fix, HasSubstr("docker run --gpus all"));
  EXPECT_THAT(f->fix, HasSubstr("nvidia-container-toolkit"));
  EXPECT_THAT(f->fix, HasSubstr("nvidia.com/gpu"));
}

TEST(DetectContainer, KubernetesAndCgroupMarkers) {
  FakeFileSystem fs;
  FakeEnvironment k8s{{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}};
  EXPECT_EQ(DetectContainer(fs, k8s), "kubernetes");
  FakeEnvironment none;
  EXPECT_EQ(DetectContainer(fs, none), "");
  fs.AddFile("/proc/1/cgroup", "0::/system.slice/containerd.service/kubepods-besteffort\n");
  EXPECT_EQ(DetectContainer(fs, none), "kubernetes");
  FakeFileSystem docker_mounts;
  docker_mounts.AddFile("/proc/self/mountinfo",
                        "1 0 0:1 / / rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/x\n");
  EXPECT_EQ(DetectContainer(docker_mounts, none), "docker");
}

TEST(CheckHost, CudaVisibleDevicesMinusOneHidesEveryGpu) {
  FakeFileSystem fs;
  AddGpuNodes(fs, 1);
  FakeEnvironment env{{"CUDA_VISIBLE_DEVICES", "-1"}};
  Report report;
  HostSummary s = CheckHost({fs, env, Facts()}, report);
  EXPECT_TRUE(s.cuda_visible_devices_hides_all);
  const Finding* f = report.Find("host.cuda_visible_devices");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->seen, HasSubstr("CUDA_VISIBLE_DEVICES=\"-1\""));
  EXPECT_THAT(f->fix, HasSubstr("unset CUDA_VISIBLE_DEVICES"));
  EXPECT_TRUE(f->gpu);
}

TEST(CheckHost, EmptyCudaVisibleDevicesHidesEveryGpu) {
  FakeFileSystem fs;
  AddGpuNodes(fs, 1);
  FakeEnvironment env{{"CUDA_VISIBLE_DEVICES", ""}};
  Report report;
  CheckHost({fs, env, Facts()}, report);
  EXPECT_EQ(report.Find("host.cuda_visible_devices")->verdict, Verdict::kFail);
}

TEST(CheckHost, CudaVisibleDevicesNamingAMissingGpuHidesAll) {
  FakeFileSystem fs;
  AddGpuNodes(fs, 1);
  FakeEnvironment env{{"CUDA_VISIBLE_DEVICES", "1,0"}};
  Report report;
  CheckHost({fs, env, Facts()}, report);
  const Finding* f = report.Find("host.cuda_visible_devices");
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->why, HasSubstr("first index 1 does not exist"));
}

TEST(CheckHost, ValidCudaVisibleDevicesIsInfo) {
  FakeFileSystem fs;
  AddGpuNodes(fs, 2);
  FakeEnvironment env{{"CUDA_VISIBLE_DEVICES", "1"}};
  Report report;
  CheckHost({fs, env, Facts()}, report);
  EXPECT_EQ(report.Find("host.cuda_visible_devices")->verdict, Verdict::kInfo);
  EXPECT_FALSE(report.HasFailure());
}

TEST(CheckHost, NvidiaVisibleDevicesVoidInContainerWarns) {
  FakeFileSystem fs;
  fs.AddFile("/.dockerenv");
  FakeEnvironment env{{"NVIDIA_VISIBLE_DEVICES", "void"}};
  Report report;
  CheckHost({fs, env, Facts()}, report);
  const Finding* f = report.Find("host.nvidia_visible_devices");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_THAT(f->fix, HasSubstr("NVIDIA_VISIBLE_DEVICES=all"));
}

TEST(ReadHostFacts, DescribesThisMachine) {
  HostFacts h = ReadHostFacts();
  EXPECT_FALSE(h.kernel_release.empty());
  EXPECT_FALSE(h.glibc_version.empty());
  EXPECT_GT(h.cpu_cores, 0u);
}

}  // namespace
}  // namespace ortgpu::doctor
