#include "doctor/placement.h"

#include <gtest/gtest.h>

#include "onnx/model_builder.h"
#include "sys/file_system.h"

namespace ortgpu::doctor {
namespace {

NodeEvent Node(std::string name, std::string op, std::string provider, std::vector<TensorTypeShape> in,
               std::vector<TensorTypeShape> out, int64_t us = 10) {
  NodeEvent e;
  e.node_name = std::move(name);
  e.op_type = std::move(op);
  e.provider = std::move(provider);
  e.inputs = std::move(in);
  e.outputs = std::move(out);
  e.duration_us = us;
  return e;
}

constexpr const char* kCuda = "CUDAExecutionProvider";
constexpr const char* kCpu = "CPUExecutionProvider";

TEST(PlacementTest, BertStyleShapeNodesOnTheCpuAreBenign) {
  std::vector<NodeEvent> events = {
      Node("/bert/Shape", "Shape", kCpu, {{"int64", {1, 128}}}, {{"int64", {2}}}),
      Node("/bert/Gather", "Gather", kCpu, {{"int64", {2}}, {"int64", {}}}, {{"int64", {}}}),
      Node("/bert/Unsqueeze", "Unsqueeze", kCpu, {{"int64", {}}}, {{"int64", {1}}}),
      Node("/bert/Concat", "Concat", kCpu, {{"int64", {1}}, {"int64", {1}}}, {{"int64", {2}}}),
      Node("/bert/embeddings/Gather", "Gather", kCuda, {{"float", {30522, 768}}, {"int64", {1, 128}}},
           {{"float", {1, 128, 768}}}, 500),
      Node("Memcpy", "MemcpyToHost", kCuda, {{"int64", {1, 128}}}, {{"int64", {1, 128}}}),
  };
  auto s = SummarizePlacement(events, kCuda);
  EXPECT_EQ(s.total_nodes, 6);
  EXPECT_EQ(s.memcpy_nodes, 1);
  EXPECT_EQ(s.shape_nodes.size(), 4u);
  EXPECT_TRUE(s.compute_fallbacks.empty());
  ASSERT_EQ(s.providers.size(), 2u);
  for (const auto& p : s.providers) {
    if (p.provider == kCuda) EXPECT_GT(p.time_share, 0.9);
  }
}

TEST(PlacementTest, AFloatConvOnTheCpuIsAComputeFallbackWithOrtsReason) {
  std::vector<NodeEvent> events = {
      Node("conv1", "Conv", kCpu, {{"double", {1, 3, 224, 224}}, {"double", {64, 3, 7, 7}}},
           {{"double", {1, 64, 112, 112}}}, 9000),
      Node("relu1", "Relu", kCuda, {{"float", {1, 64, 112, 112}}}, {{"float", {1, 64, 112, 112}}}),
  };
  std::vector<OrtLogRecord> logs(1);
  logs[0].message = "CUDA kernel not found in registries for Op type: Conv node name: conv1";
  auto s = SummarizePlacement(events, kCuda, logs);
  ASSERT_EQ(s.compute_fallbacks.size(), 1u);
  EXPECT_EQ(s.compute_fallbacks[0].op_type, "Conv");
  EXPECT_NE(s.compute_fallbacks[0].reason.find("no kernel for Conv"), std::string::npos);
  EXPECT_NE(s.compute_fallbacks[0].types.find("double[1,3,224,224]"), std::string::npos);
  EXPECT_TRUE(s.shape_nodes.empty());
}

TEST(PlacementTest, LargeIntegerTensorsAreNotShapeComputation) {
  auto e = Node("add", "Add", kCpu, {{"int64", {64, 1024}}}, {{"int64", {64, 1024}}});
  EXPECT_FALSE(IsShapeComputation(e));
  EXPECT_TRUE(IsShapeComputation(Node("s", "Shape", kCpu, {{"float", {8, 3}}}, {{"int64", {2}}})));
}

TEST(PlacementTest, RepeatedRunsCountEachNodeOnceButAddTheirTime) {
  std::vector<NodeEvent> events = {Node("a", "Conv", kCuda, {}, {}, 10), Node("a", "Conv", kCuda, {}, {}, 30)};
  auto s = SummarizePlacement(events, kCuda);
  EXPECT_EQ(s.total_nodes, 1);
  ASSERT_EQ(s.providers.size(), 1u);
  EXPECT_EQ(s.providers[0].kernel_us, 40);
  EXPECT_DOUBLE_EQ(s.providers[0].time_share, 1.0);
}

}  // namespace
}  // namespace ortgpu::doctor

namespace ortgpu::doctor {
namespace {

TEST(ProfilePlacementTest, ProfilesOneRunOfTheSessionAndLeavesNoFile) {
  auto s = Session::LoadFromBytes(onnx::BuiltinCheckModel(), {}, "builtin");
  ASSERT_TRUE(s.ok());
  auto p = ProfilePlacement(**s, {Tensor::Zeros("image", DataType::kFloat, {1, 3, 64, 64})}, ::testing::TempDir());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_GE(p->total_nodes, 5) << "Conv, Relu, pooling and MatMul nodes (some fused)";
  EXPECT_TRUE(p->compute_fallbacks.empty()) << "every node ran on the session's own provider";
  ASSERT_EQ(p->providers.size(), 1u);
  EXPECT_EQ(p->providers[0].provider, "CPUExecutionProvider");
  auto left = RealFileSystem().ListDirectory(::testing::TempDir());
  ASSERT_TRUE(left.ok());
  for (const auto& e : *left) EXPECT_EQ(e.name.rfind("ortgpu_placement_", 0), std::string::npos) << e.name;
}

}  // namespace
}  // namespace ortgpu::doctor
