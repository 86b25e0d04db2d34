#include "onnx/model_builder.h"

#include <memory>

#include "onnx.pb.h"

namespace ortgpu::onnx {

struct ModelBuilder::Impl {
  ::onnx::ModelProto model;
  ::onnx::GraphProto* graph = nullptr;
  int node_count = 0;
};

namespace {

void SetType(::onnx::ValueInfoProto* v, DataType type, const std::vector<int64_t>& shape,
             const std::vector<std::string>& dim_names) {
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(static_cast<int>(type));
  auto* s = t->mutable_shape();
  for (size_t i = 0; i < shape.size(); ++i) {
    auto* d = s->add_dim();
    if (shape[i] >= 0) {
      d->set_dim_value(shape[i]);
    } else {
      d->set_dim_param(i < dim_names.size() && !dim_names[i].empty() ? dim_names[i] : "d" + std::to_string(i));
    }
  }
}

}  // namespace

ModelBuilder::ModelBuilder(int opset) : impl_(std::make_shared<Impl>()) {
  impl_->model.set_ir_version(8);
  impl_->model.set_producer_name("ortgpu");
  auto* op = impl_->model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  impl_->graph = impl_->model.mutable_graph();
  impl_->graph->set_name("ortgpu");
}

void ModelBuilder::AddInput(const std::string& name, DataType type, const std::vector<int64_t>& shape,
                            const std::vector<std::string>& dim_names) {
  auto* v = impl_->graph->add_input();
  v->set_name(name);
  SetType(v, type, shape, dim_names);
}

void ModelBuilder::AddOutput(const std::string& name, DataType type, const std::vector<int64_t>& shape,
                             const std::vector<std::string>& dim_names) {
  auto* v = impl_->graph->add_output();
  v->set_name(name);
  SetType(v, type, shape, dim_names);
}

void ModelBuilder::AddFloatInitializer(const std::string& name, const std::vector<int64_t>& shape, float scale,
                                       uint32_t seed) {
  auto* t = impl_->graph->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : shape) {
    t->add_dims(d);
    n *= d;
  }
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->add_float_data(scale * (static_cast<float>(x % 20001) / 10000.0f - 1.0f));
  }
}

namespace {

void FillTensor(::onnx::TensorProto* t, const std::string& name, const std::vector<int64_t>& shape,
                const std::vector<float>& values) {
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

}  // namespace

void ModelBuilder::AddFloatValues(const std::string& name, const std::vector<int64_t>& shape,
                                  const std::vector<float>& values) {
  FillTensor(impl_->graph->add_initializer(), name, shape, values);
}

void ModelBuilder::AddFloat16Bits(const std::string& name, const std::vector<int64_t>& shape,
                                  const std::vector<uint16_t>& bits) {
  auto* t = impl_->graph->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT16);
  for (int64_t d : shape) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(bits.data()), bits.size() * 2));
}

void ModelBuilder::AddFloatConstant(const std::string& output, const std::vector<int64_t>& shape,
                                    const std::vector<float>& values) {
  auto* n = impl_->graph->add_node();
  n->set_op_type("Constant");
  n->set_name("Constant_" + std::to_string(impl_->node_count++));
  n->add_output(output);
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  FillTensor(a->mutable_t(), output, shape, values);
}

void ModelBuilder::AddValueInfo(const std::string& name, DataType type, const std::vector<int64_t>& shape) {
  auto* v = impl_->graph->add_value_info();
  v->set_name(name);
  SetType(v, type, shape, {});
}

void ModelBuilder::AddInt64Initializer(const std::string& name, const std::vector<int64_t>& shape,
                                       const std::vector<int64_t>& values) {
  auto* t = impl_->graph->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  for (int64_t d : shape) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}

void ModelBuilder::AddNode(const std::string& op_type, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs,
                           const std::vector<std::pair<std::string, int64_t>>& int_attrs,
                           const std::vector<std::pair<std::string, std::vector<int64_t>>>& ints_attrs) {
  auto* n = impl_->graph->add_node();
  n->set_op_type(op_type);
  n->set_name(op_type + "_" + std::to_string(impl_->node_count++));
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const auto& [k, v] : int_attrs) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  for (const auto& [k, vs] : ints_attrs) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t v : vs) a->add_ints(v);
  }
}

std::string ModelBuilder::Serialize() const { return impl_->model.SerializeAsString(); }

std::string BuiltinCheckModel() {
  ModelBuilder b;
  b.AddInput("image", DataType::kFloat, {-1, 3, 64, 64}, {"batch"});
  b.AddOutput("logits", DataType::kFloat, {-1, 10}, {"batch"});
  b.AddFloatInitializer("conv1_w", {32, 3, 3, 3}, 0.2f, 1);
  b.AddFloatInitializer("conv1_b", {32}, 0.1f, 2);
  b.AddFloatInitializer("conv2_w", {64, 32, 3, 3}, 0.06f, 3);
  b.AddFloatInitializer("conv2_b", {64}, 0.1f, 4);
  b.AddFloatInitializer("fc1_w", {64, 256}, 0.1f, 5);
  b.AddFloatInitializer("fc1_b", {256}, 0.1f, 6);
  b.AddFloatInitializer("fc2_w", {256, 10}, 0.1f, 7);
  b.AddNode("Conv", {"image", "conv1_w", "conv1_b"}, {"c1"}, {}, {{"pads", {1, 1, 1, 1}}});
  b.AddNode("Relu", {"c1"}, {"r1"});
  b.AddNode("Conv", {"r1", "conv2_w", "conv2_b"}, {"c2"}, {}, {{"pads", {1, 1, 1, 1}}});
  b.AddNode("Relu", {"c2"}, {"r2"});
  b.AddNode("GlobalAveragePool", {"r2"}, {"pooled"});
  b.AddNode("Flatten", {"pooled"}, {"flat"}, {{"axis", 1}});
  b.AddNode("MatMul", {"flat", "fc1_w"}, {"h1"});
  b.AddNode("Add", {"h1", "fc1_b"}, {"h1b"});
  b.AddNode("Relu", {"h1b"}, {"h1r"});
  b.AddNode("MatMul", {"h1r", "fc2_w"}, {"logits"});
  return b.Serialize();
}

}  // namespace ortgpu::onnx
