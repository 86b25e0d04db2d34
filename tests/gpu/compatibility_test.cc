#include "gpu/compatibility.h"

#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::gpu {
namespace {

using ::testing::HasSubstr;

TEST(CompareVersions, ComparesNumericallyNotAsText) {
  EXPECT_GT(CompareVersions("580.159.03", "580.65.06"), 0);
  EXPECT_LT(CompareVersions("470.256.02", "520"), 0);
  EXPECT_EQ(CompareVersions("580", "580.0.0"), 0);
  EXPECT_FALSE(ParseVersion("580.x").has_value());
  EXPECT_FALSE(ParseVersion("").has_value());
}

TEST(CheckDriverForCuda, Driver580_159PassesCuda13_0) {
  const CompatResult r = CheckDriverForCuda("580.159.03", 13, 0);
  EXPECT_EQ(r.verdict, CompatVerdict::kOk);
  EXPECT_EQ(r.required, ">= 580.65.06");
  EXPECT_THAT(r.source, HasSubstr("Table 3"));
}

TEST(CheckDriverForCuda, Cuda13_2OnDriver580IsMinorVersionCompatibility) {
  const CompatResult r = CheckDriverForCuda("580.65.06", 13, 2);
  EXPECT_EQ(r.verdict, CompatVerdict::kDegraded);
  EXPECT_THAT(r.message, HasSubstr("minor version compatibility"));
}

TEST(CheckDriverForCuda, Driver575CannotRunCuda13) {
  const CompatResult r = CheckDriverForCuda("575.57.08", 13, 0);
  EXPECT_EQ(r.verdict, CompatVerdict::kIncompatible);
  EXPECT_THAT(r.message, HasSubstr(">= 580.65.06"));
}

TEST(CheckDriverForCuda, Cuda12WithDriver525_60_13IsOkFor12_0AndCompatFor12_8) {
  EXPECT_EQ(CheckDriverForCuda("525.60.13", 12, 0).verdict, CompatVerdict::kOk);
  EXPECT_EQ(CheckDriverForCuda("525.60.13", 12, 8).verdict, CompatVerdict::kDegraded);
  EXPECT_EQ(CheckDriverForCuda("470.82.01", 12, 8).verdict, CompatVerdict::kIncompatible);
}

TEST(CheckDriverForCuda, UnknownMajorIsUnknownNotPass) {
  EXPECT_EQ(CheckDriverForCuda("600.1", 14, 0).verdict, CompatVerdict::kUnknown);
}

TEST(CheckDriverForArch, Rtx4090NeedsDriver520) {
  const CompatResult r = CheckDriverForArch("470.256.02", 89);
  EXPECT_EQ(r.verdict, CompatVerdict::kIncompatible);
  EXPECT_EQ(r.required, ">= 520");
  EXPECT_THAT(r.message, HasSubstr("Ada Lovelace"));
  EXPECT_EQ(CheckDriverForArch("535.183.01", 89).verdict, CompatVerdict::kOk);
}

TEST(CheckDriverForArch, BlackwellB200Needs570) {
  EXPECT_EQ(CheckDriverForArch("565.57.01", 100).verdict, CompatVerdict::kIncompatible);
  EXPECT_EQ(CheckDriverForArch("570.26", 100).verdict, CompatVerdict::kOk);
  EXPECT_EQ(CheckDriverForArch("580.159.03", 90).verdict, CompatVerdict::kOk);
}

TEST(ArchName, NamesKnownArchitectures) {
  EXPECT_EQ(ArchName(75), "Turing");
  EXPECT_EQ(ArchName(80), "Ampere");
  EXPECT_EQ(ArchName(86), "Ampere");
  EXPECT_EQ(ArchName(89), "Ada Lovelace");
  EXPECT_EQ(ArchName(90), "Hopper");
  EXPECT_EQ(ArchName(100), "Blackwell");
  EXPECT_EQ(ArchName(120), "Blackwell");
  EXPECT_EQ(ArchName(33), "unknown architecture");
  EXPECT_EQ(FormatComputeCapability(120), "12.0");
}

TEST(CheckCudaSupportsArch, Cuda13DroppedVolta) {
  EXPECT_EQ(CheckCudaSupportsArch(13, 70).verdict, CompatVerdict::kIncompatible);
  EXPECT_EQ(CheckCudaSupportsArch(12, 70).verdict, CompatVerdict::kOk);
  EXPECT_EQ(CheckCudaSupportsArch(13, 75).verdict, CompatVerdict::kOk);
}

TEST(EpBuildFor, Ort1_29HasCuda13AndCuda12BuildsWithCudnn9) {
  const EpBuildResult r = EpBuildFor("1.29.0");
  ASSERT_EQ(r.verdict, CompatVerdict::kOk);
  ASSERT_EQ(r.builds.size(), 2u);
  EXPECT_EQ(r.builds[0].cuda_major, 13);
  EXPECT_EQ(r.builds[0].cudnn_major, 9);
  EXPECT_EQ(r.builds[1].cuda_major, 12);
  // Issue 13: the CUDA 13 row cites the package it was read from, not ORT's
  // requirements page (which has no CUDA 13 table).
  EXPECT_THAT(r.builds[0].source, HasSubstr("com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9"));
  EXPECT_THAT(r.builds[0].source, HasSubstr("NEEDED libcudart.so.13"));
  EXPECT_THAT(r.builds[1].source, HasSubstr("CUDA-ExecutionProvider"));
}

TEST(EpBuildFor, EveryRowCitesItsOwnSource) {
  std::set<std::string> sources;
  for (const char* v : {"1.0.0", "1.3.0", "1.5.0", "1.8.0", "1.10.0", "1.13.0", "1.16.0", "1.17.0", "1.18.0",
                        "1.18.1", "1.19.0", "1.22.0", "1.25.0", "1.29.0"}) {
    for (const auto& b : EpBuildFor(v).builds) {
      EXPECT_FALSE(b.source.empty()) << v;
      sources.insert(b.source);
    }
  }
  EXPECT_GE(sources.size(), 15u);  // rows share no blanket citation
  EXPECT_THAT(EpBuildFor("1.18.1").builds[1].source, HasSubstr("row '1.18.1 | 12.x | 9.x"));
}

TEST(CheckDriverForCuda, CitesTheRowItUsed) {
  EXPECT_THAT(CheckDriverForCuda("580.159.03", 13, 0).source, HasSubstr("row 'CUDA 13.0 GA: >= 580.65.06'"));
  EXPECT_THAT(CheckDriverForCuda("575.51.03", 12, 9).source, HasSubstr("CUDA 12.9 GA"));
  EXPECT_THAT(CheckDriverForArch("580.159.03", 90).source, HasSubstr("CUDA 11.8 release notes (first toolkit with sm_90)"));
}

TEST(EpBuildFor, OfficialTableRows) {
  EXPECT_EQ(EpBuildFor("1.20.1").builds.front().cuda_major, 12);
  EXPECT_EQ(EpBuildFor("1.20.1").builds.front().cudnn_major, 9);
  // 1.18.0's CUDA 12 build used cuDNN 8, 1.18.1's cuDNN 9.
  auto b180 = EpBuildFor("1.18.0").builds;
  auto b181 = EpBuildFor("1.18.1").builds;
  ASSERT_EQ(b180.size(), 2u);
  EXPECT_EQ(b180[1].cudnn_major, 8);
  EXPECT_EQ(b181[1].cudnn_major, 9);
  EXPECT_EQ(EpBuildFor("1.16.3").builds.front().cuda_major, 11);
  EXPECT_EQ(EpBuildFor("9.0.0").verdict, CompatVerdict::kUnknown);
  EXPECT_EQ(EpBuildFor("not-a-version").verdict, CompatVerdict::kUnknown);
}

const std::set<int> kEpArchs = {75, 80, 86, 89, 90, 120};

TEST(CheckKernelsForArch, H200Sm90HasMachineCode) {
  const CompatResult r = CheckKernelsForArch(kEpArchs, {}, 90);
  EXPECT_EQ(r.verdict, CompatVerdict::kOk);
}

TEST(CheckKernelsForArch, B200Sm100KernelsWillBeMissing) {
  const CompatResult r = CheckKernelsForArch(kEpArchs, {}, 100);
  EXPECT_EQ(r.verdict, CompatVerdict::kIncompatible);
  EXPECT_THAT(r.message, HasSubstr("kernels will be missing"));
  EXPECT_THAT(r.message, HasSubstr("sm_120"));
}

TEST(CheckKernelsForArch, SameMajorLowerMinorIsBinaryCompatible) {
  // sm_86 cubins run on an sm_87 Orin; sm_80 on sm_86 too.
  EXPECT_EQ(CheckKernelsForArch({80}, {}, 86).verdict, CompatVerdict::kOk);
  // But never a higher minor, or another major.
  EXPECT_EQ(CheckKernelsForArch({89}, {}, 86).verdict, CompatVerdict::kIncompatible);
}

TEST(CheckKernelsForArch, PtxAllowsJit) {
  const CompatResult r = CheckKernelsForArch(kEpArchs, {90}, 100);
  EXPECT_EQ(r.verdict, CompatVerdict::kDegraded);
  EXPECT_THAT(r.message, HasSubstr("JIT"));
  EXPECT_EQ(CheckKernelsForArch({}, {120}, 100).verdict, CompatVerdict::kIncompatible);
}

TEST(CheckCudnnForCuda, MajorsMustMatch) {
  EXPECT_EQ(CheckCudnnForCuda(13000, 13000).verdict, CompatVerdict::kOk);
  const CompatResult r = CheckCudnnForCuda(12080, 13000);
  EXPECT_EQ(r.verdict, CompatVerdict::kIncompatible);
  EXPECT_THAT(r.message, HasSubstr("CUDA 12"));
}

}  // namespace
}  // namespace ortgpu::gpu
