#include "ort/staged_graph.h"

#include <gtest/gtest.h>

#include "onnx/model_builder.h"
#include "ort/builtin_session.h"

namespace ortgpu {
namespace {

// The CUDA path itself (feed, replay, fetch) runs on the GPU machine: bench
// --io served-graph with its outputs checked against the CPU, and serve's
// CUDA-graph configs (docs/BENCHMARKS.md). Here: what is refused, and how.

using test::BuiltinSession;

std::unique_ptr<InputStaging> Staging(const Session& s, int64_t rows) {
  auto st = InputStaging::Create(s, {{"image", DataType::kFloat, {3, 64, 64}}}, rows);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  return st.ok() ? std::move(st).value() : nullptr;
}

TEST(StagedGraphTest, OnTheCpuProviderItSaysCudaGraphsNeedCuda) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  auto staging = Staging(*s, 4);
  ASSERT_NE(staging, nullptr);
  auto g = StagedGraph::Create(*s, *staging, 4, {}, {});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), Code::kInvalidArgument);
  EXPECT_NE(g.status().message().find("needs --provider cuda"), std::string::npos) << g.status().message();
}

TEST(StagedGraphTest, RowsBeyondTheStagingAndShapesThatDoNotHoldThemAreRefused) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  auto staging = Staging(*s, 4);
  ASSERT_NE(staging, nullptr);
  for (int64_t rows : {0, 5}) {
    auto g = StagedGraph::Create(*s, *staging, rows, {}, {});
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), Code::kInvalidArgument);
    EXPECT_NE(g.status().message().find("staging buffers of 4 rows"), std::string::npos) << g.status().message();
  }
  auto wrong = StagedGraph::Create(*s, *staging, 2, {{2, 3, 64, 32}}, {});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("does not hold 2 staged rows"), std::string::npos) << wrong.status().message();
  auto count = StagedGraph::Create(*s, *staging, 2, {{2, 3, 64, 64}, {2}}, {});
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("one shape per staged input"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu
