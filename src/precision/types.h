// Element types of the values of an ONNX graph, as the float16 converter
// needs them: which values are float32. Taken from the graph's inputs,
// initializers, value_info and outputs where declared, and otherwise derived
// node by node from a table of the ops whose output type is not that of
// their first floating input (Cast, Shape, ArgMax, comparisons, TopK's
// indices, Constant, ConstantOfShape, If/Loop/Scan from their bodies ...).
// The general rule, output type = the first floating input's type (else
// the first input's), is what nearly every op and the common contrib ops
// (Attention, SkipLayerNormalization, EmbedLayerNormalization) follow.
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>

namespace onnx {
class GraphProto;
class NodeProto;
}

namespace ortgpu::precision {

// ONNX TensorProto.DataType numbers (FLOAT 1, FLOAT16 10); 0 unknown.
using ElemTypes = std::map<std::string, int>;

// Types of every value `graph` defines or declares, starting from `outer`
// (the enclosing graph's values, for subgraphs). Sequence and map values
// are not tensors and get no entry.
ElemTypes InferElemTypes(const ::onnx::GraphProto& graph, const ElemTypes& outer = {});

// The type of output `index` of `node` given the types known so far.
int NodeOutputType(const ::onnx::NodeProto& node, int index, const ElemTypes& types);

// True for FLOAT, FLOAT16, DOUBLE, BFLOAT16.
bool IsFloatingType(int elem_type);

}  // namespace ortgpu::precision
