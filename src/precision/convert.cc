#include "precision/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "onnx.pb.h"
#include "ort/tensor.h"
#include "precision/tensor_values.h"
#include "precision/types.h"

namespace ortgpu::precision {
namespace {

constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kF16 = ::onnx::TensorProto::FLOAT16;

// Inputs that stay float32 whatever the node's precision: ONNX types them
// tensor(float) only (Resize's scales, Upsample's scales) or ORT's float16
// kernels read them as float (GroupNorm's gamma and beta). Resize's roi goes
// with its scales (ORT's float16.py keeps both).
const std::map<std::string, std::set<int>>& Float32Inputs() {
  static const std::map<std::string, std::set<int>> m = {
      {"Resize", {1, 2}}, {"Upsample", {1}}, {"GroupNorm", {1, 2}}, {"SkipGroupNorm", {1, 2}}};
  return m;
}
// Outputs that stay float32: LayerNormalization's mean and inv_std_dev
// (type U: float or bfloat16, never float16).
const std::map<std::string, std::set<int>>& Float32Outputs() {
  static const std::map<std::string, std::set<int>> m = {{"LayerNormalization", {1, 2}}};
  return m;
}
// Inputs of any type: no Cast is needed for them (Shape and Size read only
// the shape; a Cast reads whatever it is given).
bool AnyTypeInput(const std::string& op, int index) {
  return index == 0 && (op == "Shape" || op == "Size" || op == "Cast");
}
bool IsSequenceOp(const std::string& op) {
  return op.rfind("Sequence", 0) == 0 || op == "SplitToSequence" || op == "ConcatFromSequence";
}
bool In(const std::map<std::string, std::set<int>>& table, const std::string& op, int index) {
  auto it = table.find(op);
  return it != table.end() && it->second.count(index) > 0;
}

bool HasSubgraph(const ::onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) return true;
  }
  return false;
}

// Names a subgraph (and its own subgraphs) reads from enclosing scopes.
void OuterReferences(const ::onnx::GraphProto& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) defined.insert(o);
  }
  std::set<std::string> refs;
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) refs.insert(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) OuterReferences(a.g(), refs);
      for (const auto& sg : a.graphs()) OuterReferences(sg, refs);
    }
  }
  for (const auto& r : refs) {
    if (!r.empty() && !defined.count(r)) out.insert(r);
  }
}
std::set<std::string> ImplicitInputs(const ::onnx::NodeProto& n) {
  std::set<std::string> out;
  for (const auto& a : n.attribute()) {
    if (a.has_g()) OuterReferences(a.g(), out);
    for (const auto& sg : a.graphs()) OuterReferences(sg, out);
  }
  return out;
}
void RenameInSubgraphs(::onnx::NodeProto& n, const std::string& from, const std::string& to) {
  std::function<void(::onnx::GraphProto&)> walk = [&](::onnx::GraphProto& g) {
    for (auto& sn : *g.mutable_node()) {
      for (auto& i : *sn.mutable_input()) {
        if (i == from) i = to;
      }
      for (auto& a : *sn.mutable_attribute()) {
        if (a.has_g()) walk(*a.mutable_g());
        for (auto& sg : *a.mutable_graphs()) walk(sg);
      }
    }
  };
  for (auto& a : *n.mutable_attribute()) {
    if (a.has_g()) walk(*a.mutable_g());
    for (auto& sg : *a.mutable_graphs()) walk(sg);
  }
}

::onnx::AttributeProto* FindAttr(::onnx::NodeProto& n, const std::string& name) {
  for (auto& a : *n.mutable_attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

::onnx::NodeProto MakeCast(const std::string& input, const std::string& output, int to) {
  ::onnx::NodeProto c;
  c.set_op_type("Cast");
  c.set_name(output);
  c.add_input(input);
  c.add_output(output);
  auto* a = c.add_attribute();
  a->set_name("to");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(to);
  return c;
}

enum class NodePrecision { kNeutral, kFp16, kFp32 };

// Everything one conversion of the main graph needs.
class GraphConversion {
 public:
  GraphConversion(::onnx::GraphProto& g, const ConvertOptions& o, ConversionReport& r) : g_(g), o_(o), r_(r) {}

  Status Run() {
    orig_ = InferElemTypes(g_);
    for (const auto& t : g_.initializer()) initializers_.insert(t.name());
    for (const auto& v : g_.input()) graph_inputs_.insert(v.name());
    for (const auto& v : g_.output()) graph_outputs_.insert(v.name());
    Classify();
    AssignTypes();
    RenameOutputs();
    ORTGPU_RETURN_IF_ERROR(Rebuild());
    UpdateDeclaredTypes();
    SimplifyCasts();
    return Status::Ok();
  }

 private:
  bool IsF32(const std::string& name) const {
    auto it = orig_.find(name);
    return !name.empty() && it != orig_.end() && it->second == kF32;
  }
  bool IsConstantSource(const ::onnx::NodeProto& n) const {
    return n.op_type() == "Constant" && n.output_size() == 1 && IsF32(n.output(0));
  }

  void Classify() {
    std::set<std::string> blocked_ops(o_.op_block_list.begin(), o_.op_block_list.end());
    const int count = g_.node_size();
    precision_.assign(count, NodePrecision::kNeutral);
    implicit_.resize(count);
    for (int k = 0; k < count; ++k) {
      const auto& n = g_.node(k);
      if (HasSubgraph(n)) implicit_[k] = ImplicitInputs(n);
      bool touches = false;
      for (const auto& i : n.input()) touches = touches || IsF32(i);
      for (const auto& out : n.output()) touches = touches || IsF32(out);
      for (const auto& i : implicit_[k]) touches = touches || IsF32(i);
      if (!touches || IsConstantSource(n)) continue;
      std::string reason;
      if (auto it = o_.node_block_list.find(n.name()); it != o_.node_block_list.end()) {
        reason = it->second.empty() ? "in the node block list" : it->second;
      } else if (blocked_ops.count(n.op_type())) {
        reason = "op " + n.op_type() + " is in the op block list";
      } else if (HasSubgraph(n)) {
        reason = "has a subgraph (" + n.op_type() + "): subgraphs are left in float32";
      } else if (IsSequenceOp(n.op_type())) {
        reason = "works on sequences, whose element types are not converted";
      } else {
        for (const auto& i : n.input()) {
          if (!i.empty() && !orig_.count(i)) {
            reason = "input '" + i + "' has no known element type (no value_info for it)";
            break;
          }
        }
      }
      if (reason.empty()) {
        precision_[k] = NodePrecision::kFp16;
        r_.converted.push_back(n.name());
      } else {
        precision_[k] = NodePrecision::kFp32;
        r_.kept_fp32.push_back({n.name(), n.op_type(), reason});
      }
    }
  }

  // The type node k needs at input slot `i` (named `name`): kF32, kF16, or 0
  // when it takes either (or the value is not float32 in the model).
  int Need(int k, int i) const {
    const auto& n = g_.node(k);
    if (!IsF32(n.input(i))) return 0;
    if (precision_[k] == NodePrecision::kFp32) return kF32;
    if (precision_[k] != NodePrecision::kFp16) return 0;
    if (In(Float32Inputs(), n.op_type(), i)) return kF32;
    if (AnyTypeInput(n.op_type(), i)) return 0;
    return kF16;
  }
  int OutputNeed() const { return o_.keep_io_types ? kF32 : kF16; }

  void AssignTypes() {
    now_ = orig_;
    for (const auto& v : g_.input()) {
      if (IsF32(v.name()) && !initializers_.count(v.name())) now_[v.name()] = OutputNeed();
    }
    for (int k = 0; k < g_.node_size(); ++k) {
      const auto& n = g_.node(k);
      if (precision_[k] != NodePrecision::kFp16) continue;
      for (int i = 0; i < n.output_size(); ++i) {
        if (IsF32(n.output(i)) && !In(Float32Outputs(), n.op_type(), i)) now_[n.output(i)] = kF16;
      }
    }
    // Initializers and Constants take the type their readers need; read in
    // both types, they stay float32 and get a float16 copy.
    std::map<std::string, std::set<int>> needs;
    for (int k = 0; k < g_.node_size(); ++k) {
      const auto& n = g_.node(k);
      for (int i = 0; i < n.input_size(); ++i) {
        if (int need = Need(k, i)) needs[n.input(i)].insert(need);
      }
      for (const auto& name : implicit_[k]) {
        if (IsF32(name)) needs[name].insert(kF32);
      }
    }
    for (const auto& o : graph_outputs_) {
      if (IsF32(o)) needs[o].insert(OutputNeed());
    }
    auto decide = [&](const std::string& name) {
      const auto& set = needs[name];
      if (set.count(kF16) && set.count(kF32)) {
        fp16_copy_[name] = name + "_fp16";
        now_[name + "_fp16"] = kF16;
        orig_[name + "_fp16"] = kF32;
      } else if (set.count(kF16)) {
        now_[name] = kF16;
      }
    };
    for (const auto& name : initializers_) {
      if (IsF32(name)) decide(name);
    }
    for (const auto& n : g_.node()) {
      if (IsConstantSource(n)) decide(n.output(0));
    }
  }

  // A float32 graph output whose producer now gives the other type is
  // renamed inside the graph, and a Cast at the end gives the output its
  // declared name and type.
  void RenameOutputs() {
    std::map<std::string, int> producer;
    for (int k = 0; k < g_.node_size(); ++k) {
      for (const auto& out : g_.node(k).output()) producer[out] = k;
    }
    for (const auto& o : graph_outputs_) {
      if (!IsF32(o) || !producer.count(o) || fp16_copy_.count(o)) continue;
      const int want = OutputNeed();
      if (now_[o] == want) continue;
      const std::string inner = o + (now_[o] == kF16 ? "_fp16" : "_fp32");
      for (auto& n : *g_.mutable_node()) {
        for (auto& x : *n.mutable_output()) {
          if (x == o) x = inner;
        }
        for (auto& x : *n.mutable_input()) {
          if (x == o) x = inner;
        }
        RenameInSubgraphs(n, o, inner);
      }
      for (auto& set : implicit_) {
        if (set.erase(o)) set.insert(inner);
      }
      now_[inner] = now_[o];
      orig_[inner] = kF32;
      now_[o] = want;
      tail_casts_.push_back(MakeCast(inner, o, want));
    }
  }

  Status Rebuild() {
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> out;
    std::map<std::pair<std::string, int>, std::string> casts;
    auto cast_of = [&](const std::string& name, int to, ::onnx::NodeProto* reader) {
      auto key = std::make_pair(name, to);
      auto it = casts.find(key);
      if (it != casts.end()) return it->second;
      const std::string cast_name = name + (to == kF16 ? "_to_fp16" : "_to_fp32");
      *out.Add() = MakeCast(name, cast_name, to);
      now_[cast_name] = to;
      orig_[cast_name] = kF32;
      ++r_.casts_added;
      casts.emplace(key, cast_name);
      return cast_name;
    };
    for (int k = 0; k < g_.node_size(); ++k) {
      ::onnx::NodeProto n = g_.node(k);
      if (IsConstantSource(n)) {
        ORTGPU_RETURN_IF_ERROR(ConvertConstant(n, out));
        continue;
      }
      for (int i = 0; i < n.input_size(); ++i) {
        const int need = Need(k, i);
        if (need == 0) continue;
        std::string name = n.input(i);
        if (need == kF16 && fp16_copy_.count(name)) name = fp16_copy_[name];
        if (now_[name] != need) name = cast_of(name, need, &n);
        n.set_input(i, name);
      }
      for (const auto& name : implicit_[k]) {
        if (IsF32(name) && now_[name] != kF32) RenameInSubgraphs(n, name, cast_of(name, kF32, &n));
      }
      if (precision_[k] == NodePrecision::kFp16) RetargetAttributes(n);
      *out.Add() = std::move(n);
    }
    for (auto& c : tail_casts_) {
      *out.Add() = std::move(c);
      ++r_.casts_added;
    }
    g_.mutable_node()->Swap(&out);
    return ConvertInitializers();
  }

  Status ConvertConstant(::onnx::NodeProto& n, google::protobuf::RepeatedPtrField<::onnx::NodeProto>& out) {
    const std::string name = n.output(0);
    if (now_[name] != kF16 && !fp16_copy_.count(name)) {
      *out.Add() = n;
      return Status::Ok();
    }
    ::onnx::NodeProto converted = n;
    auto* value = FindAttr(converted, "value");
    ::onnx::TensorProto t;
    if (value != nullptr) {
      t = value->t();
    } else {
      // value_float / value_floats: rewritten as a tensor attribute.
      t.set_data_type(kF32);
      for (const auto& a : converted.attribute()) {
        if (a.name() == "value_float") t.add_float_data(a.f());
        if (a.name() == "value_floats") {
          t.add_dims(a.floats_size());
          for (float f : a.floats()) t.add_float_data(f);
        }
      }
      converted.clear_attribute();
      value = converted.add_attribute();
      value->set_name("value");
      value->set_type(::onnx::AttributeProto::TENSOR);
    }
    ORTGPU_RETURN_IF_ERROR(ToFloat16(t, o_.min_positive, o_.max_finite, r_.values_clipped));
    *value->mutable_t() = std::move(t);
    ++r_.constants_converted;
    if (fp16_copy_.count(name)) {
      *out.Add() = n;  // the float32 original, for float32 readers
      converted.set_output(0, fp16_copy_[name]);
      converted.set_name(n.name() + "_fp16");
    }
    *out.Add() = std::move(converted);
    return Status::Ok();
  }

  void RetargetAttributes(::onnx::NodeProto& n) {
    if (n.op_type() == "Cast") {
      auto* to = FindAttr(n, "to");
      if (to != nullptr && to->i() == kF32) {
        to->set_i(kF16);
        ++r_.casts_retargeted;
      }
    } else if (n.op_type() == "ConstantOfShape" && IsF32(n.output(0))) {
      auto* value = FindAttr(n, "value");
      ::onnx::TensorProto t;
      if (value == nullptr) {
        value = n.add_attribute();
        value->set_name("value");
        value->set_type(::onnx::AttributeProto::TENSOR);
        t.set_data_type(kF32);
        t.add_dims(1);
        t.add_float_data(0.0f);
      } else {
        t = value->t();
      }
      if (ToFloat16(t, o_.min_positive, o_.max_finite, r_.values_clipped).ok()) {
        *value->mutable_t() = std::move(t);
        ++r_.constants_converted;
      }
    } else if (n.op_type() == "EyeLike") {
      auto* dtype = FindAttr(n, "dtype");
      if (dtype != nullptr && dtype->i() == kF32) dtype->set_i(kF16);
    }
  }

  Status ConvertInitializers() {
    const int count = g_.initializer_size();
    for (int k = 0; k < count; ++k) {
      auto* t = g_.mutable_initializer(k);
      const std::string name = t->name();
      if (auto copy = fp16_copy_.find(name); copy != fp16_copy_.end()) {
        ::onnx::TensorProto c = *t;
        c.set_name(copy->second);
        ORTGPU_RETURN_IF_ERROR(ToFloat16(c, o_.min_positive, o_.max_finite, r_.values_clipped));
        *g_.add_initializer() = std::move(c);
        ++r_.initializers_duplicated;
        t = g_.mutable_initializer(k);  // the add may have moved it
      } else if (IsF32(name) && now_[name] == kF16) {
        ORTGPU_RETURN_IF_ERROR(ToFloat16(*t, o_.min_positive, o_.max_finite, r_.values_clipped));
        ++r_.initializers_converted;
      }
    }
    return Status::Ok();
  }

  void UpdateDeclaredTypes() {
    auto update = [this](::onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || v.type().tensor_type().elem_type() != kF32) return;
      auto it = now_.find(v.name());
      if (it != now_.end()) v.mutable_type()->mutable_tensor_type()->set_elem_type(it->second);
    };
    for (auto& v : *g_.mutable_input()) update(v);
    for (auto& v : *g_.mutable_value_info()) update(v);
    for (auto& v : *g_.mutable_output()) update(v);
  }

  // Drops Casts whose input already has the target type and the second
  // Cast of fp16 -> fp32 -> fp16 (lossless there and back); a dropped
  // Cast's readers read its input instead. A useless Cast that produces a
  // graph output becomes an Identity (the output keeps its name).
  void SimplifyCasts() {
    bool changed = true;
    while (changed) {
      changed = false;
      std::map<std::string, const ::onnx::NodeProto*> producer;
      std::map<std::string, int> readers;
      for (const auto& n : g_.node()) {
        for (const auto& o : n.output()) producer[o] = &n;
        for (const auto& i : n.input()) readers[i]++;
        for (const auto& i : ImplicitInputs(n)) readers[i]++;
      }
      for (int k = 0; k < g_.node_size() && !changed; ++k) {
        auto& n = *g_.mutable_node(k);
        if (n.op_type() != "Cast" || n.input_size() != 1) continue;
        auto* to = FindAttr(n, "to");
        if (to == nullptr) continue;
        const std::string in = n.input(0), out = n.output(0);
        const int in_type = now_.count(in) ? now_[in] : 0;
        std::string replacement;
        if (in_type != 0 && in_type == to->i()) {
          replacement = in;
        } else if (to->i() == kF16 && producer.count(in) && producer[in]->op_type() == "Cast" &&
                   now_[producer[in]->input(0)] == kF16 && now_[in] == kF32) {
          replacement = producer[in]->input(0);
        } else if (!readers.count(out) && !graph_outputs_.count(out)) {
          g_.mutable_node()->DeleteSubrange(k, 1);  // a Cast nothing reads any more
          ++r_.casts_removed;
          changed = true;
          continue;
        }
        if (replacement.empty()) continue;
        if (graph_outputs_.count(out)) {
          if (replacement != in) continue;
          n.set_op_type("Identity");
          n.clear_attribute();
        } else {
          for (auto& other : *g_.mutable_node()) {
            for (auto& x : *other.mutable_input()) {
              if (x == out) x = replacement;
            }
            RenameInSubgraphs(other, out, replacement);
          }
          g_.mutable_node()->DeleteSubrange(k, 1);
        }
        ++r_.casts_removed;
        changed = true;
      }
    }
  }

  ::onnx::GraphProto& g_;
  const ConvertOptions& o_;
  ConversionReport& r_;
  ElemTypes orig_;   // element types in the model as given
  ElemTypes now_;    // element types after conversion
  std::set<std::string> initializers_, graph_inputs_, graph_outputs_;
  std::vector<NodePrecision> precision_;
  std::vector<std::set<std::string>> implicit_;  // outer values each node's subgraphs read
  std::map<std::string, std::string> fp16_copy_;  // float32 source -> its float16 copy
  std::vector<::onnx::NodeProto> tail_casts_;
};

void NameNodes(::onnx::GraphProto& g, ConversionReport& r) {
  std::set<std::string> names;
  for (const auto& n : g.node()) names.insert(n.name());
  int k = 0;
  for (auto& n : *g.mutable_node()) {
    if (!n.name().empty()) {
      ++k;
      continue;
    }
    std::string name = fmt::format("{}_{}", n.op_type(), k++);
    while (names.count(name)) name += "_";
    names.insert(name);
    n.set_name(name);
    ++r.nodes_named;
  }
}

}  // namespace

const std::vector<std::string>& DefaultOpBlockList() {
  static const std::vector<std::string> list = {
      // ORT's and onnxconverter-common's DEFAULT_OP_BLOCK_LIST.
      "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer",
      "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder",
      "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsembleClassifier", "TreeEnsembleRegressor", "ZipMap",
      "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Range", "CumSum", "Min", "Max", "Upsample",
      // Random generators (their dtype is an attribute) and quantization
      // (float16 scales need opset 19 and kernels that take them).
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
      "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"};
  return list;
}

int NameUnnamedNodes(::onnx::ModelProto& model) {
  ConversionReport r;
  NameNodes(*model.mutable_graph(), r);
  return r.nodes_named;
}

WeightCensus CountWeights(const ::onnx::ModelProto& model) {
  WeightCensus c;
  auto count = [&c](const ::onnx::TensorProto& t) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    if (t.data_type() == kF32) c.fp32_elements += n;
    if (t.data_type() == kF16) c.fp16_elements += n;
  };
  for (const auto& t : model.graph().initializer()) count(t);
  for (const auto& n : model.graph().node()) {
    if (n.op_type() != "Constant") continue;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value") count(a.t());
    }
  }
  return c;
}

std::string AlreadyFloat16(const ::onnx::ModelProto& model) {
  const WeightCensus census = CountWeights(model);
  bool float_input = false;
  for (const auto& v : model.graph().input()) float_input = float_input || v.type().tensor_type().elem_type() == kF32;
  if (census.fp16_elements > census.fp32_elements || (census.fp16_elements > 0 && census.fp32_elements == 0 && !float_input)) {
    return fmt::format(
        "the model is float16 already ({} of {} weight values are float16): left as it is; convert the float32 "
        "model instead, which gives the accuracy check a true reference",
        census.fp16_elements, census.fp16_elements + census.fp32_elements);
  }
  return "";
}

Expected<ConversionReport> ConvertToFloat16(::onnx::ModelProto& model, const ConvertOptions& options) {
  ConversionReport report;
  auto& g = *model.mutable_graph();
  report.nodes_total = g.node_size();
  report.message = AlreadyFloat16(model);
  if (!report.message.empty()) {
    report.already_fp16 = true;
    return report;
  }
  if (options.max_finite <= 0 || options.max_finite > 65504.0f || options.min_positive < 5.96e-08f) {
    return InvalidArgument(fmt::format(
        "clipping range [{}, {}] is outside float16's: min_positive must be >= 5.96e-08 (its smallest subnormal) "
        "and max_finite in (0, 65504]",
        options.min_positive, options.max_finite));
  }
  NameNodes(g, report);
  GraphConversion conversion(g, options, report);
  ORTGPU_RETURN_IF_ERROR(conversion.Run());
  return report;
}

}  // namespace ortgpu::precision
