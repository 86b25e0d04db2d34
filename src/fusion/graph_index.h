// GraphIndex: who produces and who reads each value of one ONNX graph, and
// the values of its constants (initializers and Constant nodes), as the
// fusions of this folder need them to match patterns. A node that holds a
// subgraph (If, Loop, Scan) counts as a reader of every outer value its
// subgraphs read, so nothing a subgraph needs is ever taken for unused.
// Built once over a graph and invalid once the graph changes. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
class NodeProto;
}  // namespace onnx

namespace ortgpu::fusion {

class GraphIndex {
 public:
  explicit GraphIndex(const ::onnx::GraphProto& graph);

  // The node whose output `value` is; null for graph inputs, initializers
  // and values nothing defines.
  const ::onnx::NodeProto* Producer(const std::string& value) const;
  // The producer when it has op type `op` (main domain), else null.
  const ::onnx::NodeProto* ProducerIs(const std::string& value, const std::string& op) const;
  // The distinct nodes reading `value` (a subgraph's holder included).
  const std::vector<const ::onnx::NodeProto*>& Consumers(const std::string& value) const;
  // `value` with Identity nodes followed back to their source (exporters
  // write shared weights as Identity of one initializer).
  std::string Source(const std::string& value) const;
  bool IsGraphOutput(const std::string& value) const { return outputs_.count(value) > 0; }
  bool IsInitializer(const std::string& value) const { return initializers_.count(value) > 0; }

  // The values of a constant float tensor (float32/float16/double) or
  // integer tensor (int32/int64), from an initializer or a Constant node;
  // nullopt for anything computed at run time.
  std::optional<std::vector<double>> FloatValues(const std::string& value) const;
  std::optional<std::vector<int64_t>> IntValues(const std::string& value) const;
  // The dims of an initializer (Identity nodes followed); nullopt otherwise.
  std::optional<std::vector<int64_t>> InitializerDims(const std::string& value) const;
  // A one-element float constant.
  std::optional<double> FloatScalar(const std::string& value) const;
  // The trailing elements of a shape tensor that are known: a constant, or a
  // Concat whose last inputs are one-element constants (how exporters build
  // `view(batch, -1, heads, head_size)`). `count` elements or nullopt.
  std::optional<std::vector<int64_t>> KnownShapeTail(const std::string& value, int count) const;

 private:
  std::map<std::string, const ::onnx::NodeProto*> producer_;
  std::map<std::string, std::vector<const ::onnx::NodeProto*>> consumers_;
  std::map<std::string, const void*> initializers_;  // TensorProto*
  std::set<std::string> outputs_;
};

// Small helpers over NodeProto attributes.
int64_t IntAttr(const ::onnx::NodeProto& node, const std::string& name, int64_t fallback);
float FloatAttr(const ::onnx::NodeProto& node, const std::string& name, float fallback);
std::vector<int64_t> IntsAttr(const ::onnx::NodeProto& node, const std::string& name);
// The node's op in the main ONNX domain ("" or "ai.onnx").
bool IsOnnxOp(const ::onnx::NodeProto& node, const std::string& op);

}  // namespace ortgpu::fusion
