// Edits shared by the fusions: replace a matched set of nodes by one new
// node placed where the last of them was, keeping the graph's order
// topological. Thread-compatible.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "onnx.pb.h"

namespace ortgpu::fusion {

// Removes every node in `matched` (by address) and inserts `replacement`
// at the position of the last matched node.
void ReplaceNodes(::onnx::GraphProto& graph, const std::set<const ::onnx::NodeProto*>& matched,
                  ::onnx::NodeProto replacement);
// The same with several nodes, inserted in their order.
void ReplaceNodes(::onnx::GraphProto& graph, const std::set<const ::onnx::NodeProto*>& matched,
                  std::vector<::onnx::NodeProto> replacement);

// A node name not yet used in `graph`, from `wanted`.
std::string UniqueNodeName(const ::onnx::GraphProto& graph, const std::string& wanted);

}  // namespace ortgpu::fusion
