#include "doctor/checks_compat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;

// The H200 test machine: ORT 1.29 CUDA 13 EP, CUDA 13.0, cuDNN 9.19 for CUDA
// 13, driver 580.159.03.
CompatInputs H200() {
  CompatInputs in;
  in.ort_version = "1.29.0";
  in.cuda_runtime_version = 13000;
  in.cudnn_version = 91900;
  in.cudnn_cuda_major = 13;
  in.driver_version = "580.159.03";
  in.device_ccs = {90};
  in.ep_cubin_archs = {75, 80, 86, 89, 90, 120};
  in.ep_cuda_major = 13;
  in.ep_cudnn_major = 9;
  return in;
}

TEST(CheckCompatibility, H200MachinePassesEverything) {
  Report report;
  CheckCompatibility(H200(), report);
  EXPECT_FALSE(report.HasFailure());
  EXPECT_EQ(report.Find("compat.cuda_runtime")->verdict, Verdict::kPass);
  EXPECT_EQ(report.Find("compat.cudnn")->verdict, Verdict::kPass);
  EXPECT_EQ(report.Find("compat.cudnn_cuda")->verdict, Verdict::kPass);
  EXPECT_EQ(report.Find("compat.kernels.sm_90")->verdict, Verdict::kPass);
  EXPECT_EQ(report.Find("compat.arch.sm_90")->verdict, Verdict::kPass);
}

TEST(CheckCompatibility, Driver580_159WithCuda13_0RuntimePasses) {
  Report report;
  CheckCompatibility(H200(), report);
  const Finding* f = report.Find("compat.driver_cuda");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kPass);
  EXPECT_EQ(f->facts.at("required_driver"), ">= 580.65.06");
}

TEST(CheckCompatibility, Cuda12RuntimeBesideCuda13EpFails) {
  CompatInputs in = H200();
  in.cuda_runtime_version = 12080;
  in.cudnn_cuda_major = 12;
  Report report;
  CheckCompatibility(in, report);
  const Finding* f = report.Find("compat.cuda_runtime");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->title, HasSubstr("CUDA 12 runtime beside a CUDA 13 EP"));
  EXPECT_THAT(f->fix, HasSubstr("pip install 'nvidia-cuda-runtime==13.*'"));
  EXPECT_THAT(f->fix, HasSubstr("CUDA 13 toolkit"));
}

TEST(CheckCompatibility, B200KernelsWillBeMissing) {
  CompatInputs in = H200();
  in.device_ccs = {100};
  Report report;
  CheckCompatibility(in, report);
  const Finding* f = report.Find("compat.kernels.sm_100");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->title, HasSubstr("kernels will be missing"));
  EXPECT_THAT(f->fix, HasSubstr("CMAKE_CUDA_ARCHITECTURES=100"));
  EXPECT_TRUE(f->gpu);
}

TEST(CheckCompatibility, CudnnBuiltForOtherCudaMajorFails) {
  CompatInputs in = H200();
  in.cudnn_cuda_major = 12;
  Report report;
  CheckCompatibility(in, report);
  const Finding* f = report.Find("compat.cudnn_cuda");
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->fix, HasSubstr("nvidia-cudnn-cu13==9.*"));
}

TEST(CheckCompatibility, Cudnn8BesideCudnn9EpFails) {
  CompatInputs in = H200();
  in.cudnn_version = 8907;
  Report report;
  CheckCompatibility(in, report);
  const Finding* f = report.Find("compat.cudnn");
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->seen, HasSubstr("cuDNN 8.9.7"));
}

TEST(CheckCompatibility, OldDriverForCuda13Fails) {
  CompatInputs in = H200();
  in.driver_version = "570.124.06";
  Report report;
  CheckCompatibility(in, report);
  const Finding* f = report.Find("compat.driver_cuda");
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_THAT(f->fix, HasSubstr(">= 580.65.06"));
}

TEST(CheckCompatibility, VoltaCannotRunCuda13Ep) {
  CompatInputs in = H200();
  in.device_ccs = {70};
  Report report;
  CheckCompatibility(in, report);
  EXPECT_EQ(report.Find("compat.arch.sm_70")->verdict, Verdict::kFail);
}

TEST(CheckCompatibility, EpBuildFromTableWhenElfUnknown) {
  CompatInputs in = H200();
  in.ep_cuda_major = 0;
  in.ep_cudnn_major = 0;
  in.cuda_runtime_version = 12080;
  in.cudnn_cuda_major = 12;
  Report report;
  CheckCompatibility(in, report);
  // 1.29 exists for CUDA 12 too: the table's CUDA 12 build matches.
  EXPECT_EQ(report.Find("compat.cuda_runtime")->verdict, Verdict::kPass);
  EXPECT_THAT(report.Find("compat.ep_build")->seen, HasSubstr("requirements table"));
}

TEST(CheckCompatibility, NoRuntimeIsSkipWithTheInstallCommand) {
  CompatInputs in = H200();
  in.cuda_runtime_version.reset();
  Report report;
  CheckCompatibility(in, report);
  const Finding* f = report.Find("compat.cuda_runtime");
  EXPECT_EQ(f->verdict, Verdict::kSkip);
  EXPECT_THAT(f->fix, HasSubstr("nvidia-cuda-runtime"));
}

TEST(CheckCompatibility, UninspectedFatbinIsSkip) {
  CompatInputs in = H200();
  in.ep_cubin_archs.clear();
  Report report;
  CheckCompatibility(in, report);
  EXPECT_EQ(report.Find("compat.kernels.sm_90")->verdict, Verdict::kSkip);
}

TEST(FormatCudnnVersion, BothEncodings) {
  EXPECT_EQ(FormatCudnnVersion(91900), "9.19.0");
  EXPECT_EQ(FormatCudnnVersion(91401), "9.14.1");
  EXPECT_EQ(FormatCudnnVersion(8907), "8.9.7");
}

}  // namespace
}  // namespace ortgpu::doctor
