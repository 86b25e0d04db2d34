#include "doctor/ort_log.h"

#include <gtest/gtest.h>

namespace ortgpu::doctor {
namespace {

OrtLogRecord Rec(int severity, std::string msg) {
  OrtLogRecord r;
  r.severity = severity;
  r.message = std::move(msg);
  return r;
}

TEST(OrtLogTest, EpLoadErrorNamesTheMissingLibrary) {
  auto f = ClassifyOrtLog({Rec(3,
                               "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1988 "
                               "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load "
                               "library /opt/ort/lib/libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: "
                               "cannot open shared object file: No such file or directory")});
  EXPECT_EQ(f.missing_library, "libcublasLt.so.13");
  EXPECT_FALSE(f.library_load_error.empty());
  ASSERT_EQ(f.errors.size(), 1u);
}

TEST(OrtLogTest, MemcpyAndUnassignedNodesAreRecognised) {
  auto f = ClassifyOrtLog(
      {Rec(2, "Some nodes were not assigned to the preferred execution providers which may or may not have an "
              "negative impact on performance. e.g. ORT explicitly assigns shape related ops to CPU to improve perf."),
       Rec(2, "1 Memcpy nodes are added to the graph main_graph for CUDAExecutionProvider. It might have negative "
              "impact on performance (including unable to run CUDA graph). Set session_options.log_severity_level=1 "
              "to see the detail logs before this message.")});
  EXPECT_TRUE(f.nodes_not_assigned);
  EXPECT_EQ(f.memcpy_nodes_added, 1);
  EXPECT_TRUE(f.errors.empty());
}

TEST(OrtLogTest, QuietLogMeansNothingFound) {
  auto f = ClassifyOrtLog({Rec(1, "Session created")});
  EXPECT_EQ(f.memcpy_nodes_added, -1);
  EXPECT_TRUE(f.missing_library.empty());
  EXPECT_FALSE(f.fell_back_to_cpu);
}

}  // namespace
}  // namespace ortgpu::doctor
