#include "doctor/placement.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "onnx/graph_derivation.h"
#include "onnx/model_builder.h"
#include "support/vit_attention_scale.h"
#include "sys/file_system.h"

namespace ortgpu::doctor {
namespace {

using testing::ProfiledNode;

constexpr const char* kCuda = "CUDAExecutionProvider";
constexpr const char* kCpu = "CPUExecutionProvider";

TEST(PlacementTest, BertStyleShapeNodesOnTheCpuAreBenign) {
  std::vector<NodeEvent> events = {
      ProfiledNode("/bert/Shape", "Shape", kCpu, {{"int64", {1, 128}}}, {{"int64", {2}}}),
      ProfiledNode("/bert/Gather", "Gather", kCpu, {{"int64", {2}}, {"int64", {}}}, {{"int64", {}}}),
      ProfiledNode("/bert/Unsqueeze", "Unsqueeze", kCpu, {{"int64", {}}}, {{"int64", {1}}}),
      ProfiledNode("/bert/Concat", "Concat", kCpu, {{"int64", {1}}, {"int64", {1}}}, {{"int64", {2}}}),
      ProfiledNode("/bert/embeddings/Gather", "Gather", kCuda, {{"float", {30522, 768}}, {"int64", {1, 128}}},
           {{"float", {1, 128, 768}}}, 500),
      ProfiledNode("Memcpy", "MemcpyToHost", kCuda, {{"int64", {1, 128}}}, {{"int64", {1, 128}}}),
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
      ProfiledNode("conv1", "Conv", kCpu, {{"double", {1, 3, 224, 224}}, {"double", {64, 3, 7, 7}}},
           {{"double", {1, 64, 112, 112}}}, 9000),
      ProfiledNode("relu1", "Relu", kCuda, {{"float", {1, 64, 112, 112}}}, {{"float", {1, 64, 112, 112}}}),
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
  auto e = ProfiledNode("add", "Add", kCpu, {{"int64", {64, 1024}}}, {{"int64", {64, 1024}}});
  EXPECT_FALSE(IsShapeComputation(e));
  EXPECT_TRUE(IsShapeComputation(ProfiledNode("s", "Shape", kCpu, {{"float", {8, 3}}}, {{"int64", {2}}})));
}

TEST(PlacementTest, RepeatedRunsCountEachNodeOnceButAddTheirTime) {
  std::vector<NodeEvent> events = {ProfiledNode("a", "Conv", kCuda, {}, {}, 10),
                                   ProfiledNode("a", "Conv", kCuda, {}, {}, 30)};
  auto s = SummarizePlacement(events, kCuda);
  EXPECT_EQ(s.total_nodes, 1);
  ASSERT_EQ(s.providers.size(), 1u);
  EXPECT_EQ(s.providers[0].kernel_us, 40);
  EXPECT_DOUBLE_EQ(s.providers[0].time_share, 1.0);
}

onnx::GraphDerivation VitGraph() {
  auto d = onnx::DeriveGraph(testing::VitAttentionScaleModel());
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? *d : onnx::GraphDerivation{};
}

// Issue 25: vit_b_16's Cast, Sqrt and Div of the attention scale ran on the
// CPU and doctor called them compute fallbacks by their float type.
TEST(PlacementTest, Issue25VitAttentionScaleFromAShapeIsShapeComputation) {
  const auto graph = VitGraph();
  const auto events = testing::VitAttentionScaleEvents(kCuda);
  auto s = SummarizePlacement(events, kCuda, {}, &graph);
  EXPECT_TRUE(s.by_derivation);
  EXPECT_TRUE(s.compute_fallbacks.empty()) << s.compute_fallbacks[0].node_name;
  ASSERT_EQ(s.shape_nodes.size(), 5u);
  for (const auto& n : s.shape_nodes) {
    EXPECT_EQ(n.derivation, "computed from shapes and constants only") << n.node_name;
  }
  EXPECT_EQ(s.memcpy_nodes, 1);

  // By element types alone (no graph) the float nodes were fallbacks: the defect.
  auto by_types = SummarizePlacement(events, kCuda);
  EXPECT_FALSE(by_types.by_derivation);
  EXPECT_EQ(by_types.compute_fallbacks.size(), 3u) << "Cast, Sqrt, Div";
}

TEST(PlacementTest, Issue25AFloatNodeOnTheDataPathIsStillAComputeFallback) {
  const auto graph = VitGraph();
  auto s = SummarizePlacement(testing::VitAttentionScaleEvents(kCpu), kCuda, {}, &graph);
  ASSERT_EQ(s.compute_fallbacks.size(), 1u);
  const CpuNode& n = s.compute_fallbacks[0];
  EXPECT_EQ(n.node_name, "Sqrt_7");
  EXPECT_EQ(n.derivation, "reads 'q_scaled', computed from the values of input 'x'");
  EXPECT_EQ(s.shape_nodes.size(), 5u);
}

TEST(PlacementTest, OrtsOwnCpuPreferenceIsGivenAsTheReason) {
  const auto graph = VitGraph();
  std::vector<OrtLogRecord> logs(1);
  logs[0].message = "ORT optimization- Force fallback to CPU execution for node: Sqrt_7 because the CPU execution "
                    "path is deemed faster than overhead involved with execution on other EPs  capable of executing "
                    "this node";
  auto s = SummarizePlacement(testing::VitAttentionScaleEvents(kCpu), kCuda, logs, &graph);
  ASSERT_EQ(s.compute_fallbacks.size(), 1u) << "it still reads data";
  EXPECT_NE(s.compute_fallbacks[0].reason.find("ORT placed it on the CPU on purpose"), std::string::npos)
      << s.compute_fallbacks[0].reason;
}

TEST(PlacementTest, ConstantsWithLargeOutputsAreComputeFallbacks) {
  onnx::GraphDerivation graph;
  graph.nodes["fill"] = onnx::NodeDerivation{"ConstantOfShape", false, "", ""};
  graph.nodes["tiny"] = onnx::NodeDerivation{"Range", false, "", ""};
  std::vector<NodeEvent> events = {
      ProfiledNode("fill", "ConstantOfShape", kCpu, {{"int64", {2}}}, {{"float", {64, 1024}}}),
      ProfiledNode("tiny", "Range", kCpu, {{"int64", {}}}, {{"int64", {kMaxShapeElements}}}),
  };
  auto s = SummarizePlacement(events, kCuda, {}, &graph);
  ASSERT_EQ(s.compute_fallbacks.size(), 1u);
  EXPECT_EQ(s.compute_fallbacks[0].node_name, "fill");
  EXPECT_NE(s.compute_fallbacks[0].derivation.find("more than 1024 elements"), std::string::npos);
  ASSERT_EQ(s.shape_nodes.size(), 1u);
  EXPECT_EQ(s.shape_nodes[0].node_name, "tiny");
}

TEST(PlacementTest, ANodeTheGraphLacksIsJudgedByElementTypes) {
  onnx::GraphDerivation graph;  // e.g. a node ORT renamed after saving
  std::vector<NodeEvent> events = {
      ProfiledNode("ints", "Add", kCpu, {{"int64", {4}}}, {{"int64", {4}}}),
      ProfiledNode("floats", "Add", kCpu, {{"float", {4}}}, {{"float", {4}}}),
  };
  auto s = SummarizePlacement(events, kCuda, {}, &graph);
  ASSERT_EQ(s.shape_nodes.size(), 1u);
  EXPECT_EQ(s.shape_nodes[0].node_name, "ints");
  ASSERT_EQ(s.compute_fallbacks.size(), 1u);
  EXPECT_EQ(s.compute_fallbacks[0].derivation, "");
}

}  // namespace
}  // namespace ortgpu::doctor

namespace ortgpu::doctor {
namespace {

// The real ORT saves the graph it optimised and names its nodes as its
// profile does, so every profiled node is found in the derivation.
TEST(ProfilePlacementTest, ASavedGraphNamesEveryProfiledNodeAndIsRemovedAfterwards) {
  std::string graph_path;
  {
    SavedGraph saved(::testing::TempDir());
    graph_path = saved.path();
    SessionOptions so;
    saved.Request(so);
    auto s = Session::LoadFromBytes(testing::VitAttentionScaleModel(), so, "vit attention scale");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE(RealFileSystem().Exists(graph_path)) << "ORT saved the optimised graph at session creation";
    auto graph = onnx::ReadGraphDerivation(graph_path);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    Tensor x = Tensor::Zeros("x", DataType::kFloat, {2, 4, 8});
    auto p = ProfilePlacement(**s, {x}, ::testing::TempDir());
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_TRUE(p->by_derivation) << p->graph_note;
    EXPECT_GE(p->total_nodes, 2);
    // Every node ORT profiled is a node of the saved graph.
    auto profile = (*s)->RunProfiled({x}, ::testing::TempDir() + "/ortgpu_names");
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    auto parsed = ReadProfile(*profile);
    std::remove(profile->c_str());
    ASSERT_TRUE(parsed.ok());
    ASSERT_FALSE(parsed->empty());
    for (const auto& e : *parsed) {
      EXPECT_TRUE(graph->nodes.count(e.node_name)) << e.node_name << " (" << e.op_type << ")";
    }
  }
  EXPECT_FALSE(RealFileSystem().Exists(graph_path)) << "removed with the SavedGraph";
}

TEST(ProfilePlacementTest, ASavedGraphKeepsItsWeightsInASideFileBesideIt) {
  std::string weights;
  {
    SavedGraph saved(::testing::TempDir());
    weights = saved.weights_path();
    SessionOptions so;
    saved.Request(so);
    auto s = Session::LoadFromBytes(onnx::BuiltinCheckModel(), so, "builtin");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE(RealFileSystem().Exists(weights)) << "the convolution weights (3.4 KB) went to the side file";
    auto graph_size = RealFileSystem().FileSize(saved.path());
    ASSERT_TRUE(graph_size.ok());
    EXPECT_LT(*graph_size, 4096) << "the graph file holds no large weights";
    EXPECT_TRUE(onnx::ReadGraphDerivation(saved.path()).ok());
  }
  EXPECT_FALSE(RealFileSystem().Exists(weights));
}

TEST(ProfilePlacementTest, WithoutASavedGraphElementTypesDecideAndSaySo) {
  auto s = Session::LoadFromBytes(onnx::BuiltinCheckModel(), {}, "builtin");
  ASSERT_TRUE(s.ok());
  auto p = ProfilePlacement(**s, {Tensor::Zeros("image", DataType::kFloat, {1, 3, 64, 64})}, ::testing::TempDir());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->by_derivation);
  EXPECT_EQ(p->graph_note, "the session did not save the graph ORT optimised");
}

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
