#include "fusion/fusion.h"

#include "onnx.pb.h"

namespace ortgpu::fusion {

FusionReport FuseForCuda(::onnx::ModelProto& model, const FusionOptions& options) {
  FusionReport report;
  auto& graph = *model.mutable_graph();
  const int before = graph.node_size();
  report.attention = FuseAttention(graph, report.fused, options);
  report.skip_layer_norm = FuseSkipLayerNorm(graph, report.fused);
  if (!report.any()) return report;
  RemoveUnread(graph);
  report.nodes_removed = before - graph.node_size() + report.attention + report.skip_layer_norm;
  bool has_ms = false;
  for (const auto& o : model.opset_import()) has_ms |= o.domain() == "com.microsoft";
  if (!has_ms) {
    auto* o = model.add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
  }
  return report;
}

}  // namespace ortgpu::fusion
