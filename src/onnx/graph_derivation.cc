#include "onnx/graph_derivation.h"

#include <cstdint>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "onnx.pb.h"

namespace ortgpu::onnx {
namespace {

// What one value of a graph derives from.
struct ValueFacts {
  bool data = false;        // carries a graph input's values
  std::string source;       // that graph input, when data
  std::string selected_by;  // the nearest selection op upstream, "" if none
};

// The values visible in one graph: its own, then the enclosing graphs'.
struct Scope {
  const Scope* parent = nullptr;
  std::map<std::string, ValueFacts> values;

  const ValueFacts* Find(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
    }
    return nullptr;
  }
};

std::vector<const ::onnx::GraphProto*> Subgraphs(const ::onnx::NodeProto& node) {
  std::vector<const ::onnx::GraphProto*> out;
  for (const auto& a : node.attribute()) {
    if (a.has_g()) out.push_back(&a.g());
    for (const auto& g : a.graphs()) out.push_back(&g);
  }
  return out;
}

// Names a subgraph reads from enclosing graphs (ONNX's implicit inputs):
// every name its nodes (and theirs, recursively) read that it does not
// define itself.
void FreeNames(const ::onnx::GraphProto& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& t : g.sparse_initializer()) defined.insert(t.values().name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) defined.insert(o);
  }
  std::set<std::string> used;
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) used.insert(i);
    for (const auto* sub : Subgraphs(n)) FreeNames(*sub, used);
  }
  for (const auto& name : used) {
    if (!name.empty() && !defined.count(name)) out.insert(name);
  }
}

// The facts of a subgraph's own inputs, from the node that runs it.
struct Inherited {
  bool top_level = true;  // the main graph: each input is its own data source
  ValueFacts node;        // else: what the enclosing node reads
};

void Derive(const ::onnx::GraphProto& g, Scope& scope, const Inherited& inherited, GraphDerivation& out) {
  for (const auto& t : g.initializer()) scope.values[t.name()] = ValueFacts{};
  for (const auto& t : g.sparse_initializer()) scope.values[t.values().name()] = ValueFacts{};
  for (const auto& i : g.input()) {
    if (scope.values.count(i.name())) continue;  // an initializer listed as an input: a constant
    scope.values[i.name()] = inherited.top_level ? ValueFacts{true, i.name(), ""} : inherited.node;
  }
  std::set<std::string> produced;
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) produced.insert(o);
  }
  // ONNX keeps nodes in topological order, so one pass normally does; the
  // loop only guards against a graph that is not (a node waits until the
  // nodes it reads are done; what is never produced counts as a constant).
  std::vector<bool> done(g.node_size(), false);
  for (bool progress = true; progress;) {
    progress = false;
    for (int k = 0; k < g.node_size(); ++k) {
      if (done[k]) continue;
      const ::onnx::NodeProto& n = g.node(k);
      std::vector<std::string> reads(n.input().begin(), n.input().end());
      const auto subgraphs = Subgraphs(n);
      if (!subgraphs.empty()) {
        std::set<std::string> free;
        for (const auto* sub : subgraphs) FreeNames(*sub, free);
        reads.insert(reads.end(), free.begin(), free.end());
      }
      bool ready = true;
      for (const auto& r : reads) {
        if (!r.empty() && scope.Find(r) == nullptr && produced.count(r)) ready = false;
      }
      if (!ready) continue;
      done[k] = true;
      progress = true;

      const bool shape_only = n.op_type() == "Shape" || n.op_type() == "Size";
      NodeDerivation d;
      d.op_type = n.op_type();
      ValueFacts result;
      for (const auto& r : reads) {
        const ValueFacts* f = r.empty() ? nullptr : scope.Find(r);
        if (f == nullptr) continue;
        if (result.selected_by.empty()) result.selected_by = f->selected_by;
        if (f->data && !shape_only && !d.reads_data) {
          d.reads_data = true;
          d.data_input = r;
          d.data_source = f->source;
        }
      }
      result.data = d.reads_data;
      result.source = d.data_source;
      if (IsSelectionOp(n.op_type())) result.selected_by = n.op_type() + " '" + n.name() + "'";
      for (const auto* sub : subgraphs) {
        Scope inner;
        inner.parent = &scope;
        Derive(*sub, inner, Inherited{false, result}, out);
      }
      for (const auto& o : n.output()) {
        if (!o.empty()) scope.values[o] = result;
      }
      if (!n.name().empty()) out.nodes[n.name()] = std::move(d);
    }
  }
}

}  // namespace

bool IsSelectionOp(std::string_view op_type) {
  return op_type == "NonMaxSuppression" || op_type == "TopK" || op_type == "NonZero";
}

Expected<GraphDerivation> DeriveGraph(std::string_view model_bytes) {
  ::onnx::ModelProto model;
  if (!model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) {
    return InvalidArgument("not an ONNX model: the bytes do not parse as a ModelProto");
  }
  GraphDerivation out;
  Scope scope;
  Derive(model.graph(), scope, Inherited{}, out);
  for (const auto& o : model.graph().output()) {
    const ValueFacts* f = scope.Find(o.name());
    if (f != nullptr && !f->selected_by.empty()) out.selected_outputs[o.name()] = f->selected_by;
  }
  return out;
}

Expected<GraphDerivation> ReadGraphDerivation(const std::string& model_path) {
  std::ifstream in(model_path, std::ios::binary | std::ios::ate);
  if (!in) return NotFound("cannot read the model file " + model_path);
  // Protobuf parses at most 2 GiB: a larger file is not read at all.
  if (static_cast<uint64_t>(in.tellg()) > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    return InvalidArgument(model_path + " is over 2 GiB, more than one protobuf message holds; its graph is not read");
  }
  in.seekg(0);
  std::stringstream ss;
  ss << in.rdbuf();
  auto d = DeriveGraph(ss.str());
  if (!d.ok()) return d.status().WithContext(model_path);
  return d;
}

}  // namespace ortgpu::onnx
