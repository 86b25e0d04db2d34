// Environment traps (issue #13) on machines described with fakes.
#include "doctor/checks_environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_environment.h"
#include "fakes/fake_file_system.h"

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;
using ::ortgpu::testing::FakeEnvironment;
using ::ortgpu::testing::FakeFileSystem;

struct Machine {
  FakeEnvironment env{{"HOME", "/root"}};
  FakeFileSystem fs;
  Machine() { fs.AddDirectory("/root"); }
  // An H200 with the EP's sm_90 machine code, CUDA 13 runtime loaded.
  EnvironmentCheckInputs Inputs() {
    EnvironmentCheckInputs in{env, fs};
    in.driver_loaded = true;
    in.device_ccs = {90};
    in.ep_cubin_archs = {75, 80, 90};
    in.ep_ptx_archs = {90};
    in.cudart_version = 13000;
    in.ep_cuda_major = 13;
    return in;
  }
};

// TF32 (host.tf32) is checks_precision.h's: a plain H200 host has no trap.
TEST(CheckEnvironment, PlainH200HostHasNoTrap) {
  Machine m;
  Report r;
  CheckEnvironment(m.Inputs(), r);
  EXPECT_TRUE(r.findings().empty());
}

TEST(CheckEnvironment, ContainerWithoutComputeCapabilityFails) {
  Machine m;
  m.env.Set("NVIDIA_DRIVER_CAPABILITIES", "utility");
  auto in = m.Inputs();
  in.in_container = true;
  in.driver_loaded = false;
  Report r;
  CheckEnvironment(in, r);
  const Finding* f = r.Find("host.driver_capabilities");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_EQ(f->title, "NVIDIA_DRIVER_CAPABILITIES lacks compute");
  EXPECT_THAT(f->fix, HasSubstr("NVIDIA_DRIVER_CAPABILITIES=compute,utility"));
}

TEST(CheckEnvironment, ContainerWithoutUtilityWarnsAboutNvml) {
  Machine m;
  m.env.Set("NVIDIA_DRIVER_CAPABILITIES", "compute");
  auto in = m.Inputs();
  in.in_container = true;
  Report r;
  CheckEnvironment(in, r);
  EXPECT_EQ(r.Find("host.driver_capabilities")->verdict, Verdict::kWarn);
  EXPECT_THAT(r.Find("host.driver_capabilities")->why, HasSubstr("libnvidia-ml.so.1"));
  // "all" has both; outside a container the variable means nothing.
  m.env.Set("NVIDIA_DRIVER_CAPABILITIES", "all");
  Report all;
  CheckEnvironment(in, all);
  EXPECT_EQ(all.Find("host.driver_capabilities")->verdict, Verdict::kPass);
  m.env.Set("NVIDIA_DRIVER_CAPABILITIES", "utility");
  Report host;
  CheckEnvironment(m.Inputs(), host);
  EXPECT_EQ(host.Find("host.driver_capabilities"), nullptr);
}

TEST(CheckEnvironment, EagerModuleLoadingWarns) {
  Machine m;
  m.env.Set("CUDA_MODULE_LOADING", "EAGER");
  Report r;
  CheckEnvironment(m.Inputs(), r);
  const Finding* f = r.Find("host.cuda_module_loading");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_EQ(f->fix, "export CUDA_MODULE_LOADING=LAZY");
  m.env.Set("CUDA_MODULE_LOADING", "LAZY");
  Report lazy;
  CheckEnvironment(m.Inputs(), lazy);
  EXPECT_EQ(lazy.Find("host.cuda_module_loading")->verdict, Verdict::kPass);
}

TEST(CheckEnvironment, CudaRuntimeInLdPreloadWarns) {
  Machine m;
  m.env.Set("LD_PRELOAD", "/usr/lib/libjemalloc.so.2:/usr/local/cuda-12.4/lib64/libcudart.so.12");
  m.fs.AddFile("/etc/ld.so.preload", "/opt/conda/lib/libcudnn.so.8\n");
  Report r;
  CheckEnvironment(m.Inputs(), r);
  const Finding* f = r.Find("host.ld_preload");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_EQ(f->seen, "/usr/local/cuda-12.4/lib64/libcudart.so.12 (LD_PRELOAD), /opt/conda/lib/libcudnn.so.8 (/etc/ld.so.preload)");
  EXPECT_THAT(f->why, HasSubstr("CUDA 13"));
}

TEST(CheckEnvironment, UnwritableJitCacheWarnsWhenTheEpMustJit) {
  Machine m;
  m.fs.AddReadOnly("/root");
  auto in = m.Inputs();
  in.device_ccs = {120};  // RTX 5090: the EP has only PTX <= 90 for it
  Report r;
  CheckEnvironment(in, r);
  const Finding* f = r.Find("libraries.jit_cache");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_THAT(f->seen, HasSubstr("no machine code for sm_120"));
  EXPECT_THAT(f->seen, HasSubstr("/root/.nv/ComputeCache"));
  EXPECT_THAT(f->fix, HasSubstr("CUDA_CACHE_PATH="));
  // A writable CUDA_CACHE_PATH fixes it.
  m.fs.AddDirectory("/cache");
  m.env.Set("CUDA_CACHE_PATH", "/cache/cuda");
  Report fixed;
  CheckEnvironment(in, fixed);
  EXPECT_EQ(fixed.Find("libraries.jit_cache")->verdict, Verdict::kPass);
  // With machine code for the GPU nothing is compiled: no finding.
  Report native;
  CheckEnvironment(m.Inputs(), native);
  EXPECT_EQ(native.Find("libraries.jit_cache"), nullptr);
}

TEST(CheckEnvironment, DisabledJitCacheWarns) {
  Machine m;
  m.env.Set("CUDA_CACHE_DISABLE", "1");
  auto in = m.Inputs();
  in.device_ccs = {120};
  Report r;
  CheckEnvironment(in, r);
  EXPECT_EQ(r.Find("libraries.jit_cache")->verdict, Verdict::kWarn);
  EXPECT_THAT(r.Find("libraries.jit_cache")->title, HasSubstr("CUDA_CACHE_DISABLE=1"));
}

gpu::LibraryCopy Copy(const std::string& path, gpu::CandidateSource source, const std::string& version) {
  gpu::LibraryCopy c;
  c.path = c.real_path = path;
  c.folder = DirName(path);
  c.source = source;
  c.version = version;
  return c;
}

TEST(CheckEnvironment, CondaAndPipBothProvidingCudaSaysWhichWinsAndWarnsOnAMix) {
  Machine m;
  auto in = m.Inputs();
  gpu::LibraryReport cudnn;
  cudnn.display = "cuDNN";
  cudnn.soname = "libcudnn.so.9";
  cudnn.picked = Copy("/opt/conda/lib/libcudnn.so.9", gpu::CandidateSource::kConda, "9.1.0");
  cudnn.other_copies = {Copy("/opt/conda/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
                             gpu::CandidateSource::kPip, "9.19.0")};
  gpu::LibraryReport cublas;
  cublas.display = "cuBLAS";
  cublas.soname = "libcublas.so.13";
  cublas.picked = Copy("/opt/conda/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13",
                       gpu::CandidateSource::kPip, "13.0.0");
  in.libraries = {cudnn, cublas};
  Report r;
  CheckEnvironment(in, r);
  const Finding* f = r.Find("libraries.conda_pip");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_EQ(f->title, "this process mixes CUDA libraries from conda and from pip");
  EXPECT_THAT(f->seen, HasSubstr("cuDNN used: /opt/conda/lib/libcudnn.so.9 9.1.0 (conda)"));
  EXPECT_THAT(f->fix, HasSubstr("nvidia-*-cu13"));
}

TEST(CudaJitCacheFolder, PrefersCudaCachePath) {
  EXPECT_EQ(CudaJitCacheFolder(FakeEnvironment{{"HOME", "/home/a"}}), "/home/a/.nv/ComputeCache");
  EXPECT_EQ(CudaJitCacheFolder(FakeEnvironment{{"HOME", "/home/a"}, {"CUDA_CACHE_PATH", "/c"}}), "/c");
  EXPECT_EQ(CudaJitCacheFolder(FakeEnvironment{}), "");
}

}  // namespace
}  // namespace ortgpu::doctor
