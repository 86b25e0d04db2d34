#include "fusion/graph_index.h"

#include <algorithm>

#include "onnx.pb.h"
#include "ort/tensor_proto.h"

namespace ortgpu::fusion {

namespace {

// Every value a subgraph reads that it does not define itself.
void OuterReads(const ::onnx::GraphProto& g, std::set<std::string>& defined, std::set<std::string>& reads) {
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) {
      if (!in.empty() && !defined.count(in)) reads.insert(in);
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) {
        std::set<std::string> inner = defined;
        OuterReads(a.g(), inner, reads);
      }
      for (const auto& sub : a.graphs()) {
        std::set<std::string> inner = defined;
        OuterReads(sub, inner, reads);
      }
    }
    for (const auto& out : n.output()) defined.insert(out);
  }
}

std::optional<Tensor> ConstantTensor(const ::onnx::TensorProto* t) {
  if (t == nullptr) return std::nullopt;
  auto decoded = TensorFromProto(*t, t->name());
  if (!decoded.ok()) return std::nullopt;
  return std::move(*decoded);
}

}  // namespace

GraphIndex::GraphIndex(const ::onnx::GraphProto& graph) {
  for (const auto& t : graph.initializer()) initializers_[t.name()] = &t;
  for (const auto& o : graph.output()) outputs_.insert(o.name());
  for (const auto& n : graph.node()) {
    for (const auto& out : n.output()) {
      if (!out.empty()) producer_[out] = &n;
    }
    std::set<std::string> read;
    for (const auto& in : n.input()) {
      if (!in.empty()) read.insert(in);
    }
    for (const auto& a : n.attribute()) {
      std::set<std::string> defined;
      if (a.has_g()) OuterReads(a.g(), defined, read);
      for (const auto& sub : a.graphs()) {
        std::set<std::string> inner;
        OuterReads(sub, inner, read);
      }
    }
    for (const auto& v : read) consumers_[v].push_back(&n);
  }
}

const ::onnx::NodeProto* GraphIndex::Producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : it->second;
}

const ::onnx::NodeProto* GraphIndex::ProducerIs(const std::string& value, const std::string& op) const {
  const auto* n = Producer(value);
  return n != nullptr && IsOnnxOp(*n, op) ? n : nullptr;
}

std::string GraphIndex::Source(const std::string& value) const {
  std::string v = value;
  for (int hops = 0; hops < 64; ++hops) {
    const auto* n = ProducerIs(v, "Identity");
    if (n == nullptr || n->input_size() != 1) break;
    v = n->input(0);
  }
  return v;
}

const std::vector<const ::onnx::NodeProto*>& GraphIndex::Consumers(const std::string& value) const {
  static const std::vector<const ::onnx::NodeProto*> kNone;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNone : it->second;
}

namespace {

std::optional<Tensor> Constant(const GraphIndex& index, const std::map<std::string, const void*>& inits,
                               const std::string& named) {
  const std::string value = index.Source(named);
  if (auto it = inits.find(value); it != inits.end()) {
    return ConstantTensor(static_cast<const ::onnx::TensorProto*>(it->second));
  }
  const auto* n = index.ProducerIs(value, "Constant");
  if (n == nullptr) return std::nullopt;
  for (const auto& a : n->attribute()) {
    if (a.name() == "value" && a.has_t()) return ConstantTensor(&a.t());
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<double>> GraphIndex::FloatValues(const std::string& value) const {
  auto t = Constant(*this, initializers_, value);
  if (!t || (t->dtype != DataType::kFloat && t->dtype != DataType::kFloat16 && t->dtype != DataType::kDouble)) {
    return std::nullopt;
  }
  std::vector<double> out;
  for (int64_t i = 0; i < t->element_count(); ++i) out.push_back(ElementAsDouble(*t, i));
  return out;
}

std::optional<std::vector<int64_t>> GraphIndex::IntValues(const std::string& value) const {
  auto t = Constant(*this, initializers_, value);
  if (!t || (t->dtype != DataType::kInt64 && t->dtype != DataType::kInt32)) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t->element_count(); ++i) out.push_back(static_cast<int64_t>(ElementAsDouble(*t, i)));
  return out;
}

std::optional<std::vector<int64_t>> GraphIndex::InitializerDims(const std::string& value) const {
  auto it = initializers_.find(Source(value));
  if (it == initializers_.end()) return std::nullopt;
  const auto* t = static_cast<const ::onnx::TensorProto*>(it->second);
  return std::vector<int64_t>(t->dims().begin(), t->dims().end());
}

std::optional<double> GraphIndex::FloatScalar(const std::string& value) const {
  auto v = FloatValues(value);
  if (!v || v->size() != 1) return std::nullopt;
  return v->front();
}

std::optional<std::vector<int64_t>> GraphIndex::KnownShapeTail(const std::string& value, int count) const {
  if (auto whole = IntValues(value)) {
    if (static_cast<int>(whole->size()) < count) return std::nullopt;
    return std::vector<int64_t>(whole->end() - count, whole->end());
  }
  const auto* concat = ProducerIs(value, "Concat");
  if (concat == nullptr || concat->input_size() < count) return std::nullopt;
  std::vector<int64_t> tail;
  for (int i = concat->input_size() - count; i < concat->input_size(); ++i) {
    auto part = IntValues(concat->input(i));
    if (!part || part->size() != 1) return std::nullopt;
    tail.push_back(part->front());
  }
  return tail;
}

int64_t IntAttr(const ::onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

float FloatAttr(const ::onnx::NodeProto& node, const std::string& name, float fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return a.f();
  }
  return fallback;
}

std::vector<int64_t> IntsAttr(const ::onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

bool IsOnnxOp(const ::onnx::NodeProto& node, const std::string& op) {
  return node.op_type() == op && (node.domain().empty() || node.domain() == "ai.onnx");
}

}  // namespace ortgpu::fusion
