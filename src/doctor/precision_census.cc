#include "doctor/precision_census.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "onnx.pb.h"
#include "ort/tensor.h"
#include "precision/types.h"

namespace ortgpu::doctor {
namespace {

// ONNX's element type numbers, as DataType (ort/tensor.h) mirrors them.
constexpr int kF32 = static_cast<int>(DataType::kFloat);
constexpr int kF16 = static_cast<int>(DataType::kFloat16);
constexpr int kBf16 = static_cast<int>(DataType::kBfloat16);
constexpr int kF64 = static_cast<int>(DataType::kDouble);

std::string TypeName(int t) { return std::string(ShortName(static_cast<DataType>(t))); }

int TypeOf(const precision::ElemTypes& types, const std::string& value) {
  auto it = types.find(value);
  return it == types.end() ? 0 : it->second;
}

// Ops with no floating output that still compute on floating inputs.
bool ComputesOnItsInputs(const std::string& op) {
  return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
         op == "ArgMax" || op == "ArgMin" || op == "IsNaN" || op == "IsInf";
}

// The type a node computes in: its first floating output's, else (a
// comparison, ArgMax) its first floating input's, else 0. Shape and Size
// read no values, so they compute in nothing.
int ComputeType(const ::onnx::NodeProto& n, const precision::ElemTypes& types) {
  for (const auto& v : n.output()) {
    const int t = TypeOf(types, v);
    if (precision::IsFloatingType(t)) return t;
  }
  if (!ComputesOnItsInputs(n.op_type())) return 0;
  for (const auto& v : n.input()) {
    const int t = TypeOf(types, v);
    if (precision::IsFloatingType(t)) return t;
  }
  return 0;
}

int CastTarget(const ::onnx::NodeProto& n, const precision::ElemTypes& types) {
  if (n.op_type() == "CastLike") return n.input_size() > 1 ? TypeOf(types, n.input(1)) : 0;
  for (const auto& a : n.attribute()) {
    if (a.name() == "to") return static_cast<int>(a.i());
  }
  return 0;
}

// Bits of a floating type's value set; a Cast through a wider type that
// holds every value of the narrower one loses nothing (fp16 and bf16 both
// fit in fp32, but not in each other).
bool HoldsEveryValueOf(int wide, int narrow) {
  if (narrow == kF16 || narrow == kBf16) return wide == kF32 || wide == kF64;
  if (narrow == kF32) return wide == kF64;
  return false;
}

void StripValues(::onnx::TensorProto& t) {
  t.clear_raw_data();
  t.clear_float_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_double_data();
  t.clear_uint64_data();
  t.clear_string_data();
}

struct DisjointSets {
  std::vector<int> parent;
  explicit DisjointSets(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Join(int a, int b) { parent[Find(a)] = Find(b); }
};

}  // namespace

std::string_view ModelPrecisionName(ModelPrecision p) {
  switch (p) {
    case ModelPrecision::kFloat32: return "fp32";
    case ModelPrecision::kFloat16: return "fp16";
    case ModelPrecision::kMixed: return "mixed";
    case ModelPrecision::kOther: return "other";
  }
  return "other";
}

PrecisionCensus CensusPrecision(const ::onnx::ModelProto& model, const onnx::GraphDerivation* derivation) {
  PrecisionCensus c;
  const auto& g = model.graph();
  const precision::ElemTypes types = precision::InferElemTypes(g);
  c.weights = precision::CountWeights(model);
  c.nodes = g.node_size();

  enum class Kind { kCast, kFp32, kHalf, kShape, kOther };
  std::vector<Kind> kinds(g.node_size(), Kind::kOther);
  std::vector<std::string> names(g.node_size());
  std::map<std::string, int> producer;  // value -> node index
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    names[i] = n.name().empty() ? fmt::format("{}#{}", n.op_type(), i) : n.name();
    for (const auto& out : n.output()) {
      if (!out.empty()) producer[out] = i;
    }
    if (n.op_type() == "Cast" || n.op_type() == "CastLike") {
      kinds[i] = Kind::kCast;
      ++c.casts;
      continue;
    }
    if (derivation != nullptr && !n.name().empty()) {
      auto it = derivation->nodes.find(n.name());
      if (it != derivation->nodes.end() && !it->second.reads_data) {
        kinds[i] = Kind::kShape;
        ++c.shape_nodes;
        continue;
      }
    }
    const int t = ComputeType(n, types);
    if (t == kF32) {
      kinds[i] = Kind::kFp32;
      ++c.fp32_nodes;
    } else if (t == kF16 || t == kBf16) {
      kinds[i] = Kind::kHalf;
      ++(t == kF16 ? c.fp16_nodes : c.bf16_nodes);
    } else {
      ++c.other_nodes;
    }
  }

  // Casts that change nothing, and pairs whose round trip is lossless.
  for (int i = 0; i < g.node_size(); ++i) {
    if (kinds[i] != Kind::kCast || g.node(i).input_size() == 0) continue;
    const auto& n = g.node(i);
    const int from = TypeOf(types, n.input(0));
    const int to = CastTarget(n, types);
    if (from != 0 && from == to) {
      c.useless_casts.push_back(fmt::format("{} ({} to {})", names[i], TypeName(from), TypeName(to)));
      continue;
    }
    auto p = producer.find(n.input(0));
    if (p == producer.end() || kinds[p->second] != Kind::kCast) continue;
    const auto& first = g.node(p->second);
    const int origin = first.input_size() > 0 ? TypeOf(types, first.input(0)) : 0;
    if (origin != 0 && origin == to && HoldsEveryValueOf(from, origin)) {
      c.cancelling_casts.push_back(
          {names[p->second], names[i], TypeName(origin) + " -> " + TypeName(from) + " -> " + TypeName(to)});
    }
  }

  const bool half = c.fp16_nodes + c.bf16_nodes > 0;
  c.precision = half ? (c.fp32_nodes > 0 ? ModelPrecision::kMixed : ModelPrecision::kFloat16)
                     : (c.fp32_nodes > 0 ? ModelPrecision::kFloat32 : ModelPrecision::kOther);
  if (c.precision != ModelPrecision::kMixed) return c;

  // Islands: float32 compute nodes joined by the values one writes and
  // another reads.
  DisjointSets sets(g.node_size());
  for (int i = 0; i < g.node_size(); ++i) {
    if (kinds[i] != Kind::kFp32) continue;
    for (const auto& in : g.node(i).input()) {
      auto p = producer.find(in);
      if (p != producer.end() && kinds[p->second] == Kind::kFp32) sets.Join(i, p->second);
    }
  }
  std::map<int, PrecisionIsland> by_root;
  std::map<int, int> first_node;  // root -> its first node, for graph order among ties
  for (int i = 0; i < g.node_size(); ++i) {
    if (kinds[i] != Kind::kFp32) continue;
    const int root = sets.Find(i);
    auto& island = by_root[root];
    first_node.emplace(root, i);
    island.nodes.push_back(names[i]);
    ++island.ops[g.node(i).op_type()];
  }
  // A Cast borders the island it feeds and the island it reads from.
  std::map<int, std::set<int>> borders;  // root -> its Casts
  for (int i = 0; i < g.node_size(); ++i) {
    if (kinds[i] == Kind::kFp32) {
      for (const auto& in : g.node(i).input()) {
        auto p = producer.find(in);
        if (p != producer.end() && kinds[p->second] == Kind::kCast) borders[sets.Find(i)].insert(p->second);
      }
    } else if (kinds[i] == Kind::kCast && g.node(i).input_size() > 0) {
      auto p = producer.find(g.node(i).input(0));
      if (p != producer.end() && kinds[p->second] == Kind::kFp32) borders[sets.Find(p->second)].insert(i);
    }
  }
  for (auto& [root, casts] : borders) by_root[root].border_casts = static_cast<int>(casts.size());
  std::vector<std::pair<int, int>> order;  // (first node, root)
  for (const auto& [root, first] : first_node) order.emplace_back(first, root);
  std::sort(order.begin(), order.end());
  for (const auto& [first, root] : order) c.fp32_islands.push_back(std::move(by_root[root]));
  std::stable_sort(c.fp32_islands.begin(), c.fp32_islands.end(),
                   [](const PrecisionIsland& a, const PrecisionIsland& b) { return a.nodes.size() > b.nodes.size(); });
  return c;
}

Expected<PrecisionCensus> ReadPrecisionCensus(const FileSystem& fs, const std::string& path) {
  ORTGPU_ASSIGN_OR_RETURN(const uint64_t size, fs.FileSize(path));
  if (size > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    return InvalidArgument(path + " is over 2 GiB, more than one protobuf message holds; its graph is not read");
  }
  ::onnx::ModelProto model;
  {
    ORTGPU_ASSIGN_OR_RETURN(const std::string bytes, fs.ReadFile(path));
    if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return InvalidArgument(path + " is not an ONNX model (no ModelProto parses from it)");
    }
  }
  // The census needs the weights' types and dims, not their values: drop
  // them, so the graph walk below parses kilobytes, not the whole model again.
  for (auto& t : *model.mutable_graph()->mutable_initializer()) StripValues(t);
  for (auto& n : *model.mutable_graph()->mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) StripValues(*a.mutable_t());
    }
  }
  auto derivation = onnx::DeriveGraph(model.SerializeAsString());
  return CensusPrecision(model, derivation.ok() ? &*derivation : nullptr);
}

}  // namespace ortgpu::doctor
