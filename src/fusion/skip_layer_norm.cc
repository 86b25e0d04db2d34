// Add(residual, dense) -> LayerNormalization -> com.microsoft SkipLayerNormalization.
//
// SkipLayerNormalization adds without broadcasting, so the fusion is made
// only where both sides of the Add have the activation's full shape by
// construction: one is the residual stream (the output of a
// LayerNormalization or of an earlier SkipLayerNormalization) and the
// other a dense layer over it (MatMul, or MatMul + a 1-D bias, the bias
// then folded into the fused node). Normalisation over the last axis only.
#include <set>

#include "fusion/fusion.h"
#include "fusion/graph_edit.h"
#include "fusion/graph_index.h"
#include "onnx.pb.h"

namespace ortgpu::fusion {

namespace {

using Node = ::onnx::NodeProto;

bool IsResidual(const GraphIndex& g, const std::string& value) {
  const Node* p = g.Producer(value);
  return p != nullptr && (IsOnnxOp(*p, "LayerNormalization") ||
                          (p->op_type() == "SkipLayerNormalization" && p->domain() == "com.microsoft"));
}

struct Dense {
  std::string matmul_out;  // what the fused node reads as its input
  std::string bias;  // "" when none
  const Node* bias_add = nullptr;
};

std::optional<Dense> DenseLayer(const GraphIndex& g, const std::string& value) {
  if (g.ProducerIs(value, "MatMul") != nullptr) return Dense{value, "", nullptr};
  const Node* add = g.ProducerIs(value, "Add");
  if (add == nullptr || add->input_size() != 2) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    const std::string& mm = add->input(i);
    const std::string bias = g.Source(add->input(1 - i));
    if (g.ProducerIs(mm, "MatMul") == nullptr || !g.FloatValues(bias)) continue;
    if (g.Consumers(mm).size() != 1 || g.IsGraphOutput(mm) || !g.IsInitializer(bias)) return Dense{value, "", nullptr};
    return Dense{mm, bias, add};
  }
  return std::nullopt;
}

bool OneDimensional(const ::onnx::GraphProto& graph, const std::string& name) {
  for (const auto& t : graph.initializer()) {
    if (t.name() == name) return t.dims_size() == 1;
  }
  return false;
}

}  // namespace

int FuseSkipLayerNorm(::onnx::GraphProto& graph, std::vector<std::string>& fused) {
  int made = 0;
  for (bool again = true; again;) {
    again = false;
    GraphIndex g(graph);
    for (const auto& ln : graph.node()) {
      if (!IsOnnxOp(ln, "LayerNormalization") || IntAttr(ln, "axis", -1) != -1) continue;
      bool extra_outputs = false;
      for (int i = 1; i < ln.output_size(); ++i) extra_outputs |= !ln.output(i).empty();
      if (extra_outputs || ln.input_size() < 2) continue;
      const Node* add = g.ProducerIs(ln.input(0), "Add");
      if (add == nullptr || add->input_size() != 2 || g.Consumers(add->output(0)).size() != 1 ||
          g.IsGraphOutput(add->output(0))) {
        continue;
      }
      std::optional<Dense> dense;
      std::string residual;
      for (int i = 0; i < 2 && !dense; ++i) {
        if (!IsResidual(g, add->input(1 - i))) continue;
        dense = DenseLayer(g, add->input(i));
        residual = add->input(1 - i);
      }
      if (!dense) continue;
      if (!dense->bias.empty() && !OneDimensional(graph, dense->bias)) {
        *dense = Dense{dense->bias_add->output(0), "", nullptr};
      }
      std::set<const Node*> nodes{add, &ln};
      Node skip;
      skip.set_op_type("SkipLayerNormalization");
      skip.set_domain("com.microsoft");
      std::string name = ln.name().empty() ? "SkipLayerNormalization" : ln.name();
      if (auto at = name.rfind("LayerNormalization"); at != std::string::npos) {
        name.replace(at, 18, "SkipLayerNormalization");
      }
      skip.set_name(UniqueNodeName(graph, name));
      if (!dense->bias.empty()) nodes.insert(dense->bias_add);
      skip.add_input(dense->matmul_out);
      skip.add_input(residual);
      skip.add_input(ln.input(1));
      skip.add_input(ln.input_size() > 2 ? ln.input(2) : "");
      if (!dense->bias.empty()) skip.add_input(dense->bias);
      skip.add_output(ln.output(0));
      auto* eps = skip.add_attribute();
      eps->set_name("epsilon");
      eps->set_type(::onnx::AttributeProto::FLOAT);
      eps->set_f(FloatAttr(ln, "epsilon", 1e-5f));
      fused.push_back(skip.name());
      ReplaceNodes(graph, nodes, std::move(skip));
      ++made;
      again = true;
      break;
    }
  }
  return made;
}

}  // namespace ortgpu::fusion
