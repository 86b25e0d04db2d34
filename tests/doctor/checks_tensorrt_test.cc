// The TensorRT check (issue #13) from hand-written observations.
#include "doctor/checks_tensorrt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;

constexpr const char* kEp = "/opt/ortgpu/lib/libonnxruntime_providers_tensorrt.so";

TensorRtObservation Installed() {
  TensorRtObservation o;
  o.ep_library = kEp;
  o.ep_present = true;
  o.cuda_major = 13;
  o.libraries = {{"libnvinfer.so.10", "/usr/lib/x86_64-linux-gnu/libnvinfer.so.10", "10.9.0", {}},
                 {"libnvonnxparser.so.10", "/usr/lib/x86_64-linux-gnu/libnvonnxparser.so.10", "10.9.0", {}}};
  return o;
}

TEST(CheckTensorRt, NoEpLibraryIsOneSkipThatNeverFailsRequireGpu) {
  TensorRtObservation o;
  o.ep_library = kEp;
  Report r;
  EvaluateTensorRt(o, r);
  ASSERT_EQ(r.findings().size(), 1u);
  EXPECT_EQ(r.findings()[0].verdict, Verdict::kSkip);
  EXPECT_EQ(r.findings()[0].title, "TensorRT EP not installed (TensorRT not checked)");
  EXPECT_EQ(r.ExitCode(/*require_gpu=*/true), 0);
}

TEST(CheckTensorRt, MissingLibnvinferNamesTheMajorTheEpWasBuiltFor) {
  TensorRtObservation o = Installed();
  o.libraries[0].path.clear();
  o.libraries[0].version.clear();
  o.session_skip_reason = "the TensorRT EP or its libraries are missing (provider.tensorrt)";
  Report r;
  EvaluateTensorRt(o, r);
  const Finding* f = r.Find("provider.tensorrt");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kSkip);
  EXPECT_FALSE(f->gpu);
  EXPECT_EQ(f->title, "libnvinfer.so.10 not found: the TensorRT EP cannot load");
  EXPECT_THAT(f->why, HasSubstr("built for TensorRT 10"));
  EXPECT_THAT(f->fix, HasSubstr("tensorrt-cu13==10.*"));
  EXPECT_EQ(r.Find("provider.tensorrt_session")->verdict, Verdict::kSkip);
}

TEST(CheckTensorRt, ACopyOffTheLoadersPathIsNamedInTheFix) {
  TensorRtObservation o = Installed();
  o.libraries[0].path.clear();
  o.libraries[0].other_copies = {"/opt/venv/lib/python3.12/site-packages/tensorrt_libs/libnvinfer.so.10 (10.13.0)"};
  Report r;
  EvaluateTensorRt(o, r);
  EXPECT_THAT(r.Find("provider.tensorrt")->fix,
              HasSubstr("LD_LIBRARY_PATH=/opt/venv/lib/python3.12/site-packages/tensorrt_libs:"));
}

TEST(CheckTensorRt, FoundLibrariesAndAWorkingSessionPass) {
  TensorRtObservation o = Installed();
  o.session_attempted = true;
  o.session_ms = 2400;
  o.run_ms = 0.8;
  Report r;
  EvaluateTensorRt(o, r);
  EXPECT_EQ(r.Find("provider.tensorrt")->verdict, Verdict::kPass);
  EXPECT_EQ(r.Find("provider.tensorrt")->title, "TensorRT 10.9.0 found for the TensorRT EP");
  EXPECT_EQ(r.Find("provider.tensorrt_session")->verdict, Verdict::kPass);
  EXPECT_THAT(r.Find("provider.tensorrt_session")->title, HasSubstr("2400 ms"));
}

TEST(CheckTensorRt, AVersionOfAnotherMajorBehindTheSonameWarns) {
  TensorRtObservation o = Installed();
  o.libraries[0].version = "8.6.1";
  Report r;
  EvaluateTensorRt(o, r);
  EXPECT_EQ(r.Find("provider.tensorrt")->verdict, Verdict::kWarn);
}

TEST(CheckTensorRt, AFailedSessionWarnsWithTheMessage) {
  TensorRtObservation o = Installed();
  o.session_attempted = true;
  o.session_error = "TensorRT EP failed to create engine from network";
  Report r;
  EvaluateTensorRt(o, r);
  EXPECT_EQ(r.Find("provider.tensorrt_session")->verdict, Verdict::kWarn);
  EXPECT_EQ(r.Find("provider.tensorrt_session")->seen, o.session_error);
}

TEST(TensorRtSonames, PicksTensorRtFromANeededList) {
  EXPECT_EQ(TensorRtSonames({"libnvinfer.so.10", "libcudart.so.13", "libnvinfer_plugin.so.10", "libnvonnxparser.so.10"}),
            (std::vector<std::string>{"libnvinfer.so.10", "libnvinfer_plugin.so.10", "libnvonnxparser.so.10"}));
}

}  // namespace
}  // namespace ortgpu::doctor
