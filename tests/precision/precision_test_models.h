// Small models the precision tests convert, built in memory, and helpers to
// look into a converted ModelProto the way a user would check it.
#pragma once

#include <string>
#include <vector>

#include "onnx.pb.h"
#include "onnx/model_builder.h"
#include "ort/tensor.h"
#include "precision/types.h"

namespace ortgpu::precision::test_models {

inline ::onnx::ModelProto Parse(const std::string& bytes) {
  ::onnx::ModelProto m;
  m.ParseFromString(bytes);
  return m;
}

// x [batch, 4] -> MatMul(w [4,3]) -> Add(b [3]) -> Relu -> y [batch, 3].
inline ::onnx::ModelProto MatMulAddRelu() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddOutput("y", DataType::kFloat, {-1, 3}, {"batch"});
  b.AddFloatInitializer("w", {4, 3}, 0.5f, 1);
  b.AddFloatInitializer("b", {3}, 0.1f, 2);
  b.AddNode("MatMul", {"x", "w"}, {"h"});
  b.AddNode("Add", {"h", "b"}, {"hb"});
  b.AddNode("Relu", {"hb"}, {"y"});
  b.AddValueInfo("h", DataType::kFloat, {-1, 3});
  return Parse(b.Serialize());
}

inline const ::onnx::TensorProto* Initializer(const ::onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

inline const ::onnx::NodeProto* NodeNamed(const ::onnx::ModelProto& m, const std::string& name) {
  for (const auto& n : m.graph().node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

inline int CountOp(const ::onnx::ModelProto& m, const std::string& op) {
  int k = 0;
  for (const auto& n : m.graph().node()) k += n.op_type() == op;
  return k;
}

inline int DeclaredType(const ::onnx::ModelProto& m, const std::string& name) {
  for (const auto* list : {&m.graph().input(), &m.graph().output(), &m.graph().value_info()}) {
    for (const auto& v : *list) {
      if (v.name() == name) return v.type().tensor_type().elem_type();
    }
  }
  return 0;
}

// The element type each value of the converted model has.
inline int TypeOf(const ::onnx::ModelProto& m, const std::string& name) {
  auto types = InferElemTypes(m.graph());
  auto it = types.find(name);
  return it == types.end() ? 0 : it->second;
}

// Casts that change nothing (input already of the target type) or undo the
// Cast before them (fp16 -> fp32 -> fp16): a correct conversion leaves none.
inline std::vector<std::string> UselessCasts(const ::onnx::ModelProto& m) {
  auto types = InferElemTypes(m.graph());
  std::vector<std::string> out;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Cast") continue;
    const int to = static_cast<int>(n.attribute(0).i());
    if (types[n.input(0)] == to) out.push_back(n.name() + " (input already of type " + std::to_string(to) + ")");
    for (const auto& p : m.graph().node()) {
      if (p.op_type() == "Cast" && p.output(0) == n.input(0) && types[p.input(0)] == to &&
          to == ::onnx::TensorProto::FLOAT16) {
        out.push_back(n.name() + " undoes " + p.name());
      }
    }
  }
  return out;
}

inline std::vector<float> Float16Values(const ::onnx::TensorProto& t) {
  std::vector<float> v(t.raw_data().size() / 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, t.raw_data().data() + 2 * i, 2);
    v[i] = HalfToFloat(h);
  }
  return v;
}

inline Tensor FloatTensor(const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t = Tensor::Zeros(name, DataType::kFloat, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

}  // namespace ortgpu::precision::test_models
