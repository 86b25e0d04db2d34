#include "precision/types.h"

#include <string_view>

#include "onnx.pb.h"

namespace ortgpu::precision {
namespace {

constexpr int kFloat = ::onnx::TensorProto::FLOAT;
constexpr int kInt64 = ::onnx::TensorProto::INT64;
constexpr int kInt32 = ::onnx::TensorProto::INT32;
constexpr int kUint8 = ::onnx::TensorProto::UINT8;
constexpr int kBool = ::onnx::TensorProto::BOOL;

const ::onnx::AttributeProto* FindAttr(const ::onnx::NodeProto& node, std::string_view name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int InputType(const ::onnx::NodeProto& node, int i, const ElemTypes& types) {
  if (i >= node.input_size() || node.input(i).empty()) return 0;
  auto it = types.find(node.input(i));
  return it == types.end() ? 0 : it->second;
}

int TensorTypeOf(const ::onnx::ValueInfoProto& v) {
  return v.type().has_tensor_type() ? v.type().tensor_type().elem_type() : 0;
}

int SubgraphOutputType(const ::onnx::NodeProto& node, std::string_view attr, int index) {
  const auto* a = FindAttr(node, attr);
  if (a == nullptr || !a->has_g() || index >= a->g().output_size() || index < 0) return 0;
  return TensorTypeOf(a->g().output(index));
}

int DtypeAttr(const ::onnx::NodeProto& node, int otherwise) {
  const auto* a = FindAttr(node, "dtype");
  return a != nullptr ? static_cast<int>(a->i()) : otherwise;
}

}  // namespace

bool IsFloatingType(int t) {
  return t == kFloat || t == ::onnx::TensorProto::FLOAT16 || t == ::onnx::TensorProto::DOUBLE ||
         t == ::onnx::TensorProto::BFLOAT16;
}

int NodeOutputType(const ::onnx::NodeProto& node, int index, const ElemTypes& types) {
  const std::string& op = node.op_type();
  if (op == "Cast") {
    const auto* to = FindAttr(node, "to");
    return to != nullptr ? static_cast<int>(to->i()) : 0;
  }
  if (op == "CastLike") return InputType(node, 1, types);
  if (op == "Shape" || op == "Size" || op == "NonZero" || op == "ArgMax" || op == "ArgMin") return kInt64;
  if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
      op == "Not" || op == "And" || op == "Or" || op == "Xor" || op == "IsNaN" || op == "IsInf") {
    return kBool;
  }
  if ((op == "TopK" || op == "MaxPool") && index == 1) return kInt64;
  if (op == "Unique" && index >= 1) return kInt64;
  if (op == "Dropout" && index == 1) return kBool;
  if (op == "LayerNormalization" && index >= 1) return kFloat;  // mean, inv_std_dev: type U
  if (op == "Constant") {
    if (const auto* a = FindAttr(node, "value")) return a->t().data_type();
    if (FindAttr(node, "value_float") || FindAttr(node, "value_floats")) return kFloat;
    if (FindAttr(node, "value_int") || FindAttr(node, "value_ints")) return kInt64;
    return ::onnx::TensorProto::STRING;
  }
  if (op == "ConstantOfShape") {
    const auto* a = FindAttr(node, "value");
    return a != nullptr ? a->t().data_type() : kFloat;
  }
  if (op == "RandomNormal" || op == "RandomUniform") return DtypeAttr(node, kFloat);
  if (op == "EyeLike" || op == "RandomNormalLike" || op == "RandomUniformLike" || op == "Bernoulli") {
    return DtypeAttr(node, InputType(node, 0, types));
  }
  if (op == "Multinomial") return DtypeAttr(node, kInt32);
  if (op == "QuantizeLinear") {
    const int zp = InputType(node, 2, types);
    return zp != 0 ? zp : kUint8;
  }
  if (op == "DequantizeLinear") return InputType(node, 1, types);
  if (op == "DynamicQuantizeLinear") return index == 1 ? kFloat : kUint8;
  // Sequences are not tensors; what is read out of one is unknown here.
  if (op == "SplitToSequence" || op == "SequenceConstruct" || op == "SequenceEmpty" || op == "SequenceInsert" ||
      op == "SequenceErase" || op == "SequenceAt" || op == "ConcatFromSequence") {
    return 0;
  }
  if (op == "If") return SubgraphOutputType(node, "then_branch", index);
  if (op == "Loop") return SubgraphOutputType(node, "body", index + 1);
  if (op == "Scan") return SubgraphOutputType(node, "body", index);
  for (int i = 0; i < node.input_size(); ++i) {
    const int t = InputType(node, i, types);
    if (IsFloatingType(t)) return t;
  }
  return InputType(node, 0, types);
}

ElemTypes InferElemTypes(const ::onnx::GraphProto& graph, const ElemTypes& outer) {
  ElemTypes types = outer;
  auto declare = [&types](const ::onnx::ValueInfoProto& v) {
    const int t = TensorTypeOf(v);
    if (t != 0) types[v.name()] = t;
  };
  for (const auto& v : graph.input()) declare(v);
  for (const auto& t : graph.initializer()) types[t.name()] = t.data_type();
  for (const auto& v : graph.value_info()) declare(v);
  for (const auto& v : graph.output()) declare(v);
  ElemTypes declared;
  for (const auto& v : graph.value_info()) declared[v.name()] = TensorTypeOf(v);
  for (const auto& v : graph.output()) declared[v.name()] = TensorTypeOf(v);
  for (const auto& node : graph.node()) {
    for (int i = 0; i < node.output_size(); ++i) {
      const std::string& out = node.output(i);
      if (out.empty()) continue;
      auto d = declared.find(out);
      if (d != declared.end() && d->second != 0) continue;  // the model says
      const int t = NodeOutputType(node, i, types);
      if (t != 0) types[out] = t;
    }
  }
  return types;
}

}  // namespace ortgpu::precision
