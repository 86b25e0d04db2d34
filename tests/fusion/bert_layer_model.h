// One encoder layer of BERT as torch 2.11's TorchScript exporter writes it
// (opset 17, transformers' SDPA attention): heads split by Reshape with a
// shape Concat-ed from Shape nodes, Q and K each scaled by a Mul before
// their MatMul, an additive mask, Softmax and the IsNaN guard, weights
// shared through Identity. Hidden 8, 2 heads of 4; inputs x [batch, seq, 8]
// and mask [batch, 1, seq, seq] (additive), output y [batch, seq, 8].
#pragma once

#include <cmath>
#include <string>

#include "onnx.pb.h"
#include "onnx/model_builder.h"

namespace ortgpu::fusion::test_models {

struct LayerOptions {
  bool guard = true;            // the IsNaN/Where guard after Softmax
  bool probs_as_output = false;  // Softmax's output is also a graph output (not fusable)
  // torch 2.11's view(batch, seq, -1, head_size) and view(batch, seq, -1):
  // the heads follow from the projection's weights.
  bool infer_heads = false;
};

inline ::onnx::ModelProto BertLayer(LayerOptions o = {}) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, -1, 8}, {"batch", "seq", ""});
  b.AddInput("mask", DataType::kFloat, {-1, 1, -1, -1}, {"batch", "", "seq", "seq"});
  b.AddOutput("y", DataType::kFloat, {-1, -1, 8}, {"batch", "seq", ""});
  if (o.probs_as_output) b.AddOutput("probs", DataType::kFloat, {-1, 2, -1, -1}, {"batch", "", "seq", "seq"});
  uint32_t seed = 10;
  for (const char* w : {"Wq", "Wk", "Wv", "Wo"}) b.AddFloatInitializer(w, {8, 8}, 0.4f, seed++);
  for (const char* w : {"bq", "bk", "bv", "bo_init", "g0", "b0", "g1", "b1"}) b.AddFloatInitializer(w, {8}, 0.2f, seed++);
  b.AddNode("Identity", {"bo_init"}, {"bo"});  // a shared weight, as torch writes it
  const float c = std::sqrt(1.0f / std::sqrt(4.0f));
  b.AddFloatValues("c", {}, {c});
  b.AddFloatValues("zero", {}, {0.0f});
  b.AddInt64Initializer("i0", {}, {0});
  b.AddInt64Initializer("i1", {}, {1});
  b.AddInt64Initializer("axes0", {1}, {0});
  b.AddInt64Initializer("heads", {1}, {o.infer_heads ? -1 : 2});
  b.AddInt64Initializer("size", {1}, {4});
  b.AddInt64Initializer("hidden", {1}, {o.infer_heads ? -1 : 8});
  b.AddNode("LayerNormalization", {"x", "g0", "b0"}, {"h"}, {{"axis", -1}});
  // The shapes [batch, seq, 2, 4] and [batch, seq, 8], from Shape(h).
  b.AddNode("Shape", {"h"}, {"hs"});
  b.AddNode("Gather", {"hs", "i0"}, {"bs"}, {{"axis", 0}});
  b.AddNode("Gather", {"hs", "i1"}, {"sq"}, {{"axis", 0}});
  b.AddNode("Unsqueeze", {"bs", "axes0"}, {"bs1"});
  b.AddNode("Unsqueeze", {"sq", "axes0"}, {"sq1"});
  b.AddNode("Concat", {"bs1", "sq1", "heads", "size"}, {"split"}, {{"axis", 0}});
  b.AddNode("Concat", {"bs1", "sq1", "hidden"}, {"merged"}, {{"axis", 0}});
  for (const std::string p : {"q", "k", "v"}) {
    b.AddNode("MatMul", {"h", "W" + p}, {p + "m"});
    b.AddNode("Add", {"b" + p, p + "m"}, {p + "a"});
    b.AddNode("Reshape", {p + "a", "split"}, {p + "r"});
  }
  b.AddNode("Transpose", {"qr"}, {"qt"}, {}, {{"perm", {0, 2, 1, 3}}});
  b.AddNode("Transpose", {"kr"}, {"kt"}, {}, {{"perm", {0, 2, 3, 1}}});
  b.AddNode("Transpose", {"vr"}, {"vt"}, {}, {{"perm", {0, 2, 1, 3}}});
  b.AddNode("Mul", {"qt", "c"}, {"qs"});
  b.AddNode("Mul", {"kt", "c"}, {"ks"});
  b.AddNode("MatMul", {"qs", "ks"}, {"scores"});
  b.AddNode("Add", {"scores", "mask"}, {"masked"});
  b.AddNode("Softmax", {"masked"}, {o.probs_as_output ? "probs" : "p"}, {{"axis", -1}});
  std::string probs = o.probs_as_output ? "probs" : "p";
  if (o.guard) {
    b.AddNode("IsNaN", {probs}, {"nan"});
    b.AddNode("Where", {"nan", "zero", probs}, {"pg"});
    probs = "pg";
  }
  b.AddNode("MatMul", {probs, "vt"}, {"ctx"});
  b.AddNode("Transpose", {"ctx"}, {"ctxt"}, {}, {{"perm", {0, 2, 1, 3}}});
  b.AddNode("Reshape", {"ctxt", "merged"}, {"attn"});
  b.AddNode("MatMul", {"attn", "Wo"}, {"om"});
  b.AddNode("Add", {"bo", "om"}, {"oa"});
  b.AddNode("Add", {"oa", "h"}, {"res"});
  b.AddNode("LayerNormalization", {"res", "g1", "b1"}, {"y"}, {{"axis", -1}});
  ::onnx::ModelProto m;
  m.ParseFromString(b.Serialize());
  int i = 0;
  for (auto& n : *m.mutable_graph()->mutable_node()) n.set_name(n.op_type() + "_" + std::to_string(i++));
  return m;
}

inline int CountOp(const ::onnx::ModelProto& m, const std::string& op) {
  int k = 0;
  for (const auto& n : m.graph().node()) k += n.op_type() == op;
  return k;
}

inline const ::onnx::NodeProto* FirstOp(const ::onnx::ModelProto& m, const std::string& op) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == op) return &n;
  }
  return nullptr;
}

}  // namespace ortgpu::fusion::test_models
