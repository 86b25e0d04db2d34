#include "doctor/doctor.h"

#include <gtest/gtest.h>

#include <fstream>

#include "fakes/fake_environment.h"
#include "fakes/fake_file_system.h"
#include "fakes/fake_gpu_driver.h"
#include "fakes/fake_nvml.h"
#include "onnx.pb.h"
#include "onnx/model_builder.h"
#include "precision/convert.h"

namespace ortgpu::doctor {
namespace {

using ortgpu::testing::FakeEnvironment;
using ortgpu::testing::FakeFileSystem;
using ortgpu::testing::FakeGpuDriver;
using ortgpu::testing::FakeNvml;

// A machine with no NVIDIA driver at all: the CI runner, a laptop.
struct CpuOnlyMachine {
  FakeFileSystem fs;
  FakeEnvironment env;
  FakeGpuDriver driver;
  FakeNvml nvml;
  std::unique_ptr<gpu::LibrarySearch> search;
  DoctorSeams seams;

  explicit CpuOnlyMachine(const FileSystem* real_fs = nullptr) {
    fs.AddFile("/etc/os-release", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n");
    driver.load_status = Unavailable("libcuda.so.1: cannot open shared object file: No such file or directory");
    nvml.load_status = Unavailable("libnvidia-ml.so.1: cannot open shared object file: No such file or directory");
    const FileSystem& use = real_fs ? *real_fs : fs;
    search = std::make_unique<gpu::LibrarySearch>(use, env);
    seams.fs = &use;
    seams.env = &env;
    seams.driver = &driver;
    seams.nvml = &nvml;
    seams.search = search.get();
    seams.host.cpu_cores = 2;
    seams.host.glibc_version = "2.36";
    seams.ort_version = "1.29.0";  // what the CLI asks ORT for
    seams.ep_library_path = "/opt/ortgpu/lib/libonnxruntime_providers_cuda.so";
    // Any ELF file serves as the EP's stand-in: its NEEDED list is read.
    auto elf = RealFileSystem().ReadFile("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
    fs.AddFile(seams.ep_library_path, elf.ok() ? *elf : "");
  }
};

TEST(RunDoctorTest, CpuOnlyMachineSkipsGpuLayersAndExitsZeroUnlessGpuIsRequired) {
  CpuOnlyMachine m;
  DoctorOptions o;
  o.run_onnxruntime = false;
  Report r = RunDoctor(o, m.seams);
  EXPECT_EQ(r.LayerVerdict(Layer::kDriver), Verdict::kSkip);
  EXPECT_EQ(r.Find("driver.libcuda")->verdict, Verdict::kSkip);
  EXPECT_EQ(r.Find("libraries.cudnn")->verdict, Verdict::kSkip) << r.Find("libraries.cudnn")->title;
  for (const auto& f : r.findings()) EXPECT_NE(f.verdict, Verdict::kFail) << f.id << ": " << f.title;
  EXPECT_EQ(r.ExitCode(/*require_gpu=*/false), 0);
  EXPECT_EQ(r.ExitCode(/*require_gpu=*/true), 1);
}

TEST(RunDoctorTest, ShapeNamingNoModelInputIsAFinding) {
  CpuOnlyMachine m(&RealFileSystem());
  const std::string path = ::testing::TempDir() + "/doctor_run_model.onnx";
  std::ofstream(path, std::ios::binary) << onnx::BuiltinCheckModel();
  DoctorOptions o;
  o.models = {path};
  o.observe.timed_runs = 2;
  o.observe.warmup_runs = 0;
  o.observe.builtin_batch = 1;
  o.observe.shapes["imgae"] = {1, 3, 64, 64};
  Report r = RunDoctor(o, m.seams);
  ASSERT_NE(r.Find("model.1.cpu"), nullptr);
  EXPECT_EQ(r.Find("model.1.cpu")->verdict, Verdict::kPass);
  EXPECT_EQ(r.Find("model.1.cuda")->verdict, Verdict::kSkip);
  const Finding* typo = r.Find("model.shape");
  ASSERT_NE(typo, nullptr);
  EXPECT_EQ(typo->verdict, Verdict::kFail);
  EXPECT_NE(typo->seen.find("image"), std::string::npos);
  EXPECT_EQ(r.ExitCode(false), 1);
}

// Issue 25: doctor judged the EP builds of a hard-coded "1.29.0" whenever
// ORT was not run, whatever ORT was loaded. The version is the one ORT
// reports, through the seam.
TEST(RunDoctorTest, Issue25CompatibilityJudgesTheVersionOrtReports) {
  CpuOnlyMachine m;
  m.seams.ort_version = "1.30.1";
  DoctorOptions o;
  o.run_onnxruntime = false;
  Report r = RunDoctor(o, m.seams);
  const Finding* build = r.Find("compat.ep_build");
  ASSERT_NE(build, nullptr);
  EXPECT_NE(build->seen.find("ONNX Runtime 1.30.1"), std::string::npos) << build->seen;
  EXPECT_NE(build->seen.find("is not in ortgpu's CUDA EP table"), std::string::npos) << build->seen;
  EXPECT_EQ(build->seen.find("1.29.0"), std::string::npos) << build->seen;

  m.seams.ort_version = "1.29.0";
  r = RunDoctor(o, m.seams);
  build = r.Find("compat.ep_build");
  ASSERT_NE(build, nullptr);
  EXPECT_NE(build->seen.find("ONNX Runtime 1.29.0 CUDA EP builds"), std::string::npos) << build->seen;
}

// An H200 machine as the fakes describe it: driver and NVML work, no ORT run.
struct H200Machine : CpuOnlyMachine {
  H200Machine() {
    driver.load_status = Status::Ok();
    nvml.load_status = Status::Ok();
    driver.AddDevice("NVIDIA H200", "GPU-db6efce2-9109-5d84-cc7c-85f99424970e", 9, 0, 141ull << 30);
    nvml.AddDevice("NVIDIA H200", "GPU-db6efce2-9109-5d84-cc7c-85f99424970e", 9, 0, 141ull << 30, 0);
    fs.AddFile("/dev/nvidia0");
    fs.AddFile("/dev/nvidiactl");
    fs.AddFile("/dev/nvidia-uvm");
    seams.pid = 100;
  }
};

TEST(RunDoctorTest, HealthLayerReadsTheCheckedGpuAndRunsTheCopyTestOnce) {
  H200Machine m;
  m.nvml.health[0] = FakeNvml::HealthyH200();
  m.nvml.health[0].pcie_width = 4;
  DoctorOptions o;
  o.run_onnxruntime = false;
  Report r = RunDoctor(o, m.seams);
  EXPECT_EQ(m.driver.copy_tests, 1);
  ASSERT_NE(r.Find("health.pcie"), nullptr);
  EXPECT_EQ(r.Find("health.pcie")->verdict, Verdict::kWarn);
  EXPECT_EQ(r.Find("health.copy")->verdict, Verdict::kPass);
  EXPECT_EQ(r.Find("health.clocks")->verdict, Verdict::kSkip);
  EXPECT_EQ(r.Find("health.clocks")->seen, "the end-to-end run was not requested");
}

TEST(RunDoctorTest, CopyTestCanBeTurnedOff) {
  H200Machine m;
  DoctorOptions o;
  o.run_onnxruntime = false;
  o.copy_test = false;
  Report r = RunDoctor(o, m.seams);
  EXPECT_EQ(m.driver.copy_tests, 0);
  EXPECT_EQ(r.Find("health.copy")->verdict, Verdict::kSkip);
}

TEST(RunDoctorTest, MigInstanceVisibleToCudaIsMatchedToItsGpu) {
  H200Machine m;
  // Under MIG, CUDA lists the instance (its UUID with CUDA's GPU- prefix),
  // NVML the whole GPU.
  m.driver.devices[0].uuid = "GPU-0b1c2d3e-0000-1111-2222-333344445555";
  m.driver.devices[0].total_memory = 18ull << 30;
  m.nvml.devices[0].mig_current = true;
  m.nvml.health[0] = FakeNvml::HealthyH200();
  m.nvml.health[0].mig_instances =
      std::vector<gpu::NvmlMigInstance>{{"MIG-0b1c2d3e-0000-1111-2222-333344445555", 18ull << 30}};
  m.env.Set("CUDA_VISIBLE_DEVICES", "MIG-0b1c2d3e-0000-1111-2222-333344445555");
  DoctorOptions o;
  o.run_onnxruntime = false;
  Report r = RunDoctor(o, m.seams);
  const Finding* mig = r.Find("health.mig");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->title, "this process runs on MIG instance MIG-0b1c2d3e-0000-1111-2222-333344445555");
}

// Issue 26: the GPU's tensor cores, TF32 and who turned it off, and the
// census of a mixed model, end to end through the seams. The model runs on
// ORT's CPU provider (the fake machine's CUDA libraries are missing).
TEST(RunDoctorTest, Issue26PrecisionOfTheGpuTf32AndAMixedModel) {
  H200Machine m;
  m.env.Set("NVIDIA_TF32_OVERRIDE", "0");
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 8}, {"batch"});
  b.AddOutput("y", DataType::kFloat, {-1, 8}, {"batch"});
  b.AddFloatInitializer("w", {8, 8}, 0.5f, 1);
  b.AddNode("MatMul", {"x", "w"}, {"h"});
  b.AddNode("Softmax", {"h"}, {"s"});
  b.AddNode("Relu", {"s"}, {"y"});
  ::onnx::ModelProto model;
  model.ParseFromString(b.Serialize());
  precision::ConvertOptions keep_softmax;
  keep_softmax.node_block_list = {{"Softmax_1", "kept in float32"}};
  ASSERT_TRUE(precision::ConvertToFloat16(model, keep_softmax).ok());
  const std::string path = ::testing::TempDir() + "/doctor_mixed_model.onnx";
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
  m.fs.AddFile(path, model.SerializeAsString());  // doctor reads the graph through the seam; ORT the real file
  DoctorOptions o;
  o.models = {path};
  o.copy_test = false;
  o.observe.timed_runs = 1;
  o.observe.warmup_runs = 0;
  o.observe.builtin_batch = 1;
  Report r = RunDoctor(o, m.seams);

  const Finding* gpu = r.Find("driver.precision.0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->facts.at("tensor_core_precisions"), "fp16,bf16,tf32,fp8,int8");
  const Finding* tf32 = r.Find("host.tf32");
  ASSERT_NE(tf32, nullptr);
  EXPECT_EQ(tf32->verdict, Verdict::kWarn);
  EXPECT_EQ(tf32->facts.at("source"), "NVIDIA_TF32_OVERRIDE");
  const Finding* census = r.Find("model.1.precision");
  ASSERT_NE(census, nullptr) << (r.Find("model.1.load") ? r.Find("model.1.load")->seen : "");
  EXPECT_EQ(census->facts.at("precision"), "mixed");
  EXPECT_EQ(census->facts.at("fp32_nodes"), "1");
  EXPECT_EQ(census->facts.at("fp16_nodes"), "2");
  const Finding* islands = r.Find("model.1.fp32_islands");
  ASSERT_NE(islands, nullptr);
  EXPECT_NE(islands->seen.find("Softmax_1"), std::string::npos) << islands->seen;
  EXPECT_EQ(r.Find("model.1.fp16_cpu"), nullptr);  // no CUDA run to place nodes
  // Issue 30: with no CUDA run, contexts on other GPUs are not checked.
  const Finding* contexts = r.Find("health.contexts");
  ASSERT_NE(contexts, nullptr);
  EXPECT_EQ(contexts->verdict, Verdict::kSkip);
  EXPECT_EQ(contexts->seen, "no CUDA run in this process (provider layer)");
}

}  // namespace
}  // namespace ortgpu::doctor
