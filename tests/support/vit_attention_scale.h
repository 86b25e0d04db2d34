// The graph pattern behind issue 25's vit_b_16 refusal, as a small model:
// torch exports the attention scale 1/sqrt(head_dim) as float arithmetic on
// an element of q's Shape (Shape -> Gather -> Cast -> Sqrt -> Div), which
// ORT keeps on the CPU while the compute runs on the GPU. Node names are
// ModelBuilder's (<op>_<index>); the profile events are what the H200's
// CUDA run reported for such nodes. Header-only; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "onnx/model_builder.h"
#include "ort/profile.h"

namespace ortgpu::testing {

// x [batch,4,8] -> MatMul_0 -> q; Shape_1(q) -> Gather_2 -> Cast_3 ->
// Sqrt_4 -> Div_5(one, .) = scale; Mul_6(q, scale) -> Sqrt_7 -> y.
inline std::string VitAttentionScaleModel() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4, 8}, {"batch"});
  b.AddOutput("y", DataType::kFloat, {-1, 4, 8}, {"batch"});
  b.AddFloatInitializer("w", {8, 8}, 0.1f, 1);
  b.AddFloatInitializer("one", {}, 1.0f, 2);
  b.AddInt64Initializer("last", {}, {2});
  b.AddNode("MatMul", {"x", "w"}, {"q"});
  b.AddNode("Shape", {"q"}, {"q_shape"});
  b.AddNode("Gather", {"q_shape", "last"}, {"head_dim"}, {{"axis", 0}});
  b.AddNode("Cast", {"head_dim"}, {"head_dim_f"}, {{"to", 1}});
  b.AddNode("Sqrt", {"head_dim_f"}, {"sqrt_d"});
  b.AddNode("Div", {"one", "sqrt_d"}, {"scale"});
  b.AddNode("Mul", {"q", "scale"}, {"q_scaled"});
  b.AddNode("Sqrt", {"q_scaled"}, {"y"});
  return b.Serialize();
}

// One node's kernel event as ORT's profile reports it.
inline NodeEvent ProfiledNode(std::string name, std::string op, std::string provider, std::vector<TensorTypeShape> in,
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

// One profiled CUDA run of VitAttentionScaleModel: the scale's nodes on the
// CPU; Sqrt_7 (on the data path) on `sqrt7_provider`.
inline std::vector<NodeEvent> VitAttentionScaleEvents(const std::string& sqrt7_provider) {
  const std::string cuda = "CUDAExecutionProvider", cpu = "CPUExecutionProvider";
  return {
      ProfiledNode("MatMul_0", "MatMul", cuda, {{"float", {1, 4, 8}}, {"float", {8, 8}}}, {{"float", {1, 4, 8}}}),
      ProfiledNode("Shape_1", "Shape", cpu, {{"float", {1, 4, 8}}}, {{"int64", {3}}}),
      ProfiledNode("Gather_2", "Gather", cpu, {{"int64", {3}}, {"int64", {}}}, {{"int64", {}}}),
      ProfiledNode("Cast_3", "Cast", cpu, {{"int64", {}}}, {{"float", {}}}),
      ProfiledNode("Sqrt_4", "Sqrt", cpu, {{"float", {}}}, {{"float", {}}}),
      ProfiledNode("Div_5", "Div", cpu, {{"float", {}}, {"float", {}}}, {{"float", {}}}),
      ProfiledNode("Memcpy_token_0", "MemcpyFromHost", cuda, {{"float", {}}}, {{"float", {}}}),
      ProfiledNode("Mul_6", "Mul", cuda, {{"float", {1, 4, 8}}, {"float", {}}}, {{"float", {1, 4, 8}}}),
      ProfiledNode("Sqrt_7", "Sqrt", sqrt7_provider, {{"float", {1, 4, 8}}}, {{"float", {1, 4, 8}}}),
  };
}

}  // namespace ortgpu::testing
