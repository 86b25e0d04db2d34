// Fusions for the CUDA execution provider: the rewrites ORT's transformer
// optimizer makes (onnxruntime/python/tools/transformers, fusion_attention.py
// and fusion_skiplayernorm.py), in C++ over the ONNX protobuf, for the
// patterns today's exporters write and ORT's own graph optimizer cannot
// fuse because it does not know the shapes (`view(batch, -1, heads, size)`
// computed from Shape nodes):
//
//  - scaled dot-product attention (torch's SDPA export: Q and K scaled by
//    Mul before their MatMul, an additive mask, Softmax and the IsNaN guard
//    after it; or the older eager form, one Div or Mul after the MatMul)
//    becomes one com.microsoft MultiHeadAttention, whose CUDA kernels are
//    fused (memory-efficient or flash attention) in float16, its Q, K and
//    V projections packed into one MatMul;
//  - Add(residual, dense) -> LayerNormalization becomes one
//    com.microsoft SkipLayerNormalization (the dense layer's bias folded in).
//
// A fusion changes the graph, not the function: the caller checks the fused
// model against the original (precision::ConvertPrecision does, and drops
// the fusions when the check fails). Semantics differ only where the
// original had no defined answer: a query whose keys are all masked gets 0
// from torch's IsNaN guard and an average of the values, or NaN, from the
// fused kernel. Pure functions over protobuf values; thread-compatible.
#pragma once

#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class GraphProto;
}  // namespace onnx

namespace ortgpu::fusion {

struct FusionReport {
  int attention = 0;         // MultiHeadAttention nodes made
  int skip_layer_norm = 0;   // SkipLayerNormalization nodes made
  int nodes_removed = 0;     // nodes gone: fused, or left with no reader
  std::vector<std::string> fused;  // names of the nodes made, in graph order
  bool any() const { return attention + skip_layer_norm > 0; }
};

struct FusionOptions {
  // Pack the Q, K and V projections into one MatMul feeding the fused
  // attention (attention.cc): fastest on the CUDA EP, but ORT's CPU
  // provider has no kernel for packed QKV.
  bool pack_qkv = true;
};

// Applies every fusion to the main graph of `model` and removes what is
// left unread; adds the com.microsoft opset when it made a node of it.
FusionReport FuseForCuda(::onnx::ModelProto& model, const FusionOptions& options = {});

// The single fusions (exposed for tests); each returns how many it made.
int FuseAttention(::onnx::GraphProto& graph, std::vector<std::string>& fused, const FusionOptions& options = {});
int FuseSkipLayerNorm(::onnx::GraphProto& graph, std::vector<std::string>& fused);
// Removes nodes none of whose outputs is read or a graph output, until
// none is left, and initializers nothing reads; returns the nodes removed.
int RemoveUnread(::onnx::GraphProto& graph);

}  // namespace ortgpu::fusion
