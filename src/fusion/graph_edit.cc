#include "fusion/graph_edit.h"

#include <vector>

#include "fusion/fusion.h"
#include "fusion/graph_index.h"

namespace ortgpu::fusion {

void ReplaceNodes(::onnx::GraphProto& graph, const std::set<const ::onnx::NodeProto*>& matched,
                  ::onnx::NodeProto replacement) {
  std::vector<::onnx::NodeProto> one;
  one.push_back(std::move(replacement));
  ReplaceNodes(graph, matched, std::move(one));
}

void ReplaceNodes(::onnx::GraphProto& graph, const std::set<const ::onnx::NodeProto*>& matched,
                  std::vector<::onnx::NodeProto> replacement) {
  google::protobuf::RepeatedPtrField<::onnx::NodeProto> kept;
  int last = -1;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (matched.count(&graph.node(i))) last = i;
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    if (i == last) {
      for (auto& n : replacement) *kept.Add() = std::move(n);
    }
    if (!matched.count(&graph.node(i))) *kept.Add() = std::move(*graph.mutable_node(i));
  }
  graph.mutable_node()->Swap(&kept);
}

std::string UniqueNodeName(const ::onnx::GraphProto& graph, const std::string& wanted) {
  std::set<std::string> taken;
  for (const auto& n : graph.node()) taken.insert(n.name());
  if (!taken.count(wanted)) return wanted;
  for (int k = 1;; ++k) {
    std::string name = wanted + "_" + std::to_string(k);
    if (!taken.count(name)) return name;
  }
}

int RemoveUnread(::onnx::GraphProto& graph) {
  int removed = 0;
  for (;;) {
    GraphIndex index(graph);
    std::set<const ::onnx::NodeProto*> unread;
    for (const auto& n : graph.node()) {
      bool read = false;
      for (const auto& out : n.output()) {
        if (!out.empty() && (!index.Consumers(out).empty() || index.IsGraphOutput(out))) read = true;
      }
      if (!read) unread.insert(&n);
    }
    if (unread.empty()) break;
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> kept;
    for (auto& n : *graph.mutable_node()) {
      if (!unread.count(&n)) *kept.Add() = std::move(n);
    }
    graph.mutable_node()->Swap(&kept);
    removed += static_cast<int>(unread.size());
  }
  GraphIndex index(graph);
  std::set<std::string> inputs;
  for (const auto& i : graph.input()) inputs.insert(i.name());
  google::protobuf::RepeatedPtrField<::onnx::TensorProto> inits;
  for (auto& t : *graph.mutable_initializer()) {
    if (inputs.count(t.name()) || !index.Consumers(t.name()).empty() || index.IsGraphOutput(t.name())) {
      *inits.Add() = std::move(t);
    }
  }
  graph.mutable_initializer()->Swap(&inits);
  return removed;
}

}  // namespace ortgpu::fusion
