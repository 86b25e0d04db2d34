// Scaled dot-product attention -> com.microsoft MultiHeadAttention.
//
// Matched from each Softmax, upwards and downwards:
//
//   q3 -> Reshape(.., [.., H, D]) -> Transpose(0,2,1,3) [-> Mul(cq)] ---------+
//   k3 -> Reshape(.., [.., H, D]) -> Transpose(0,2,3,1) [-> Mul(ck)] -> MatMul [-> Div|Mul(c)] [-> Add(mask)]
//         (or Transpose(0,2,1,3) then Transpose(0,1,3,2))                          |
//   -> Softmax(-1) [-> Where(IsNaN(.), 0, .)] -> MatMul(., v4) -> Transpose(0,2,1,3) -> Reshape -> out
//   v3 -> Reshape(.., [.., H, D]) -> Transpose(0,2,1,3) = v4
//
// and replaced by MultiHeadAttention(q3, k3, v3, -, -, mask) with
// num_heads H and scale cq * ck * c (or 1/c for Div), writing `out`. Where
// q3, k3 and v3 are Add(MatMul(x, W), b) of one x, W and b float32
// initializers read only there, the three projections are packed too:
//
//   MatMul(x, Wqkv) -> Reshape(.., [0, 0, H, 3, D]) -> MultiHeadAttention(qkv, -, -, [bq|bk|bv], -, mask)
//
// Wqkv holds each head's Q, K and V columns side by side (MultiHeadAttention's
// packed QKV layout): one GEMM where three ran, and the CUDA kernel adds the
// biases as it unpacks. ORT's CPU provider has no kernel for packed QKV: the
// fusions are for the CUDA EP, and a conversion whose fused model does not run
// is made again without them (precision::ConvertPrecision).
#include <array>
#include <cmath>
#include <set>

#include "fusion/fusion.h"
#include "fusion/graph_edit.h"
#include "fusion/graph_index.h"
#include "onnx.pb.h"

namespace ortgpu::fusion {

namespace {

using Node = ::onnx::NodeProto;

struct Heads {
  std::string input;  // the [batch, sequence, H*D] value
  int64_t heads = 0;
  int64_t head_size = 0;
};

// The last dim of a projection's output, from its weights: Add(bias, MatMul(x, W))
// or MatMul(x, W) with W [in, hidden] and the bias [hidden]; 0 when unknown.
int64_t HiddenSize(const GraphIndex& g, const std::string& value) {
  std::string v = value;
  if (const Node* add = g.ProducerIs(v, "Add")) {
    for (int i = 0; i < 2; ++i) {
      auto dims = g.InitializerDims(add->input(i));
      if (dims && dims->size() == 1) return dims->front();
    }
    for (int i = 0; i < 2; ++i) {
      if (g.ProducerIs(add->input(i), "MatMul") != nullptr) v = add->input(i);
    }
  }
  if (const Node* mm = g.ProducerIs(v, "MatMul")) {
    auto dims = g.InitializerDims(mm->input(1));
    if (dims && dims->size() == 2) return dims->back();
  }
  return 0;
}

// value = Transpose(perm)(Reshape(x, shape ending in H, D)); H may be -1
// (derived from the projection's weights).
std::optional<Heads> SplitHeads(const GraphIndex& g, const std::string& value, const std::vector<int64_t>& perm,
                                std::set<const Node*>& nodes) {
  const Node* t = g.ProducerIs(value, "Transpose");
  if (t == nullptr || IntsAttr(*t, "perm") != perm) return std::nullopt;
  const Node* r = g.ProducerIs(t->input(0), "Reshape");
  if (r == nullptr || r->input_size() < 2) return std::nullopt;
  auto tail = g.KnownShapeTail(r->input(1), 2);
  if (!tail || (*tail)[1] <= 0 || ((*tail)[0] <= 0 && (*tail)[0] != -1)) return std::nullopt;
  int64_t heads = (*tail)[0];
  if (heads == -1) {
    // view(batch, seq, -1, head_size): the heads follow from the hidden size.
    const int64_t hidden = HiddenSize(g, r->input(0));
    if (hidden <= 0 || hidden % (*tail)[1] != 0) return std::nullopt;
    heads = hidden / (*tail)[1];
  }
  nodes.insert(t);
  nodes.insert(r);
  return Heads{r->input(0), heads, (*tail)[1]};
}

// value = Mul(x, constant scalar) or x: the scalar (1 when absent) and x.
std::pair<double, std::string> StripScale(const GraphIndex& g, const std::string& value, std::set<const Node*>& nodes) {
  const Node* mul = g.ProducerIs(value, "Mul");
  if (mul == nullptr || mul->input_size() != 2) return {1.0, value};
  for (int i = 0; i < 2; ++i) {
    if (auto c = g.FloatScalar(mul->input(i))) {
      nodes.insert(mul);
      return {*c, mul->input(1 - i)};
    }
  }
  return {1.0, value};
}

// The key side: [B, H, D, T] from k3.
std::optional<Heads> KeyHeads(const GraphIndex& g, const std::string& value, std::set<const Node*>& nodes) {
  if (auto direct = SplitHeads(g, value, {0, 2, 3, 1}, nodes)) return direct;
  const Node* t = g.ProducerIs(value, "Transpose");
  if (t == nullptr || IntsAttr(*t, "perm") != std::vector<int64_t>{0, 1, 3, 2}) return std::nullopt;
  auto inner = SplitHeads(g, t->input(0), {0, 2, 1, 3}, nodes);
  if (inner) nodes.insert(t);
  return inner;
}

// value = [Div(c) | Mul(c)](MatMul(..)) or MatMul(..): the MatMul, with the
// factor multiplied into `scale`.
const Node* ScoresMatMul(const GraphIndex& g, const std::string& value, std::set<const Node*>& nodes, double& scale) {
  std::string scores = value;
  if (const Node* div = g.ProducerIs(scores, "Div")) {
    auto c = g.FloatScalar(div->input(1));
    if (!c || *c == 0) return nullptr;
    scale /= *c;
    nodes.insert(div);
    scores = div->input(0);
  } else if (g.ProducerIs(scores, "Mul") != nullptr) {
    auto [c, rest] = StripScale(g, scores, nodes);
    if (rest == scores) return nullptr;
    scale *= c;
    scores = rest;
  }
  const Node* mm = g.ProducerIs(scores, "MatMul");
  if (mm != nullptr) nodes.insert(mm);
  return mm;
}

const Node* OnlyConsumer(const GraphIndex& g, const std::string& value) {
  const auto& c = g.Consumers(value);
  return c.size() == 1 && !g.IsGraphOutput(value) ? c.front() : nullptr;
}

struct Match {
  std::set<const Node*> nodes;
  Heads q, k, v;
  double scale = 1.0;
  std::string mask;    // "" when none
  const Node* out = nullptr;  // the final Reshape
};

// One of the Q, K and V projections: `value` is Add(MatMul(x, W), b) (either
// order), W a float32 initializer [in, hidden] and b one [hidden] (Identity
// nodes followed), the MatMul read only by the Add and the sum only by the
// pattern's Reshape.
struct Projection {
  std::string x;
  std::vector<double> weight;  // row-major [in, hidden]
  std::vector<double> bias;
  int64_t in = 0;
  std::set<const Node*> nodes;  // the MatMul and the Add
};

const ::onnx::TensorProto* FloatInitializer(const ::onnx::GraphProto& graph, const std::string& name) {
  for (const auto& t : graph.initializer()) {
    if (t.name() == name) return t.data_type() == ::onnx::TensorProto::FLOAT ? &t : nullptr;
  }
  return nullptr;
}

std::optional<Projection> ProjectionOf(const GraphIndex& g, const ::onnx::GraphProto& graph, const std::string& value,
                                       int64_t hidden) {
  const Node* add = g.ProducerIs(value, "Add");
  if (add == nullptr || add->input_size() != 2 || g.Consumers(value).size() != 1 || g.IsGraphOutput(value)) {
    return std::nullopt;
  }
  for (int i = 0; i < 2; ++i) {
    const Node* mm = g.ProducerIs(add->input(i), "MatMul");
    if (mm == nullptr || mm->input_size() != 2 || g.Consumers(add->input(i)).size() != 1 ||
        g.IsGraphOutput(add->input(i))) {
      continue;
    }
    const auto* w = FloatInitializer(graph, g.Source(mm->input(1)));
    const auto* b = FloatInitializer(graph, g.Source(add->input(1 - i)));
    if (w == nullptr || b == nullptr || w->dims_size() != 2 || w->dims(1) != hidden || b->dims_size() != 1 ||
        b->dims(0) != hidden) {
      return std::nullopt;
    }
    auto weight = g.FloatValues(w->name());
    auto bias = g.FloatValues(b->name());
    if (!weight || !bias) return std::nullopt;
    return Projection{mm->input(0), std::move(*weight), std::move(*bias), w->dims(0), {mm, add}};
  }
  return std::nullopt;
}

// The Q, K and V projections when all three are of one input and can be
// packed, else nullopt.
std::optional<std::array<Projection, 3>> PackableProjections(const GraphIndex& g, const ::onnx::GraphProto& graph,
                                                             const Match& m) {
  const int64_t hidden = m.q.heads * m.q.head_size;
  std::array<Projection, 3> p;
  const Heads* sides[3] = {&m.q, &m.k, &m.v};
  for (int i = 0; i < 3; ++i) {
    auto one = ProjectionOf(g, graph, sides[i]->input, hidden);
    if (!one || (i > 0 && (one->x != p[0].x || one->in != p[0].in))) return std::nullopt;
    p[i] = std::move(*one);
  }
  return p;
}

::onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  return t;
}

// A name no value or initializer of `graph` has, from `wanted`.
std::string UniqueValueName(const ::onnx::GraphProto& graph, const std::string& wanted) {
  std::set<std::string> taken;
  for (const auto& t : graph.initializer()) taken.insert(t.name());
  for (const auto& i : graph.input()) taken.insert(i.name());
  for (const auto& n : graph.node()) taken.insert(n.output().begin(), n.output().end());
  std::string name = wanted;
  for (int k = 1; taken.count(name); ++k) name = wanted + "_" + std::to_string(k);
  return name;
}

// Adds the packed weight, bias and shape to `graph`, the MatMul and Reshape
// making [batch, seq, heads, 3, size] from them (returned, in order), and
// sets `mha`'s first four inputs; the projections' nodes join `m.nodes`.
// Column (head, t, j) of the packed weight is column (head, j) of
// projection t; the bias stays [bq, bk, bv].
std::vector<Node> PackProjections(::onnx::GraphProto& graph, const std::array<Projection, 3>& p, Match& m, Node& mha) {
  const int64_t heads = m.q.heads, size = m.q.head_size, in = p[0].in;
  std::vector<float> weight(static_cast<size_t>(in * 3 * heads * size));
  for (int64_t r = 0; r < in; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int t = 0; t < 3; ++t) {
        for (int64_t j = 0; j < size; ++j) {
          weight[((r * heads + h) * 3 + t) * size + j] = static_cast<float>(p[t].weight[r * heads * size + h * size + j]);
        }
      }
    }
  }
  std::vector<float> bias;
  for (const auto& one : p) {
    bias.insert(bias.end(), one.bias.begin(), one.bias.end());
    m.nodes.insert(one.nodes.begin(), one.nodes.end());
  }
  const std::string w = UniqueValueName(graph, mha.name() + "/qkv_weight");
  *graph.add_initializer() = FloatTensor(w, {in, 3 * heads * size}, weight);
  const std::string b = UniqueValueName(graph, mha.name() + "/qkv_bias");
  *graph.add_initializer() = FloatTensor(b, {3 * heads * size}, bias);
  const std::string shape = UniqueValueName(graph, mha.name() + "/qkv_shape");
  ::onnx::TensorProto dims;
  dims.set_name(shape);
  dims.set_data_type(::onnx::TensorProto::INT64);
  dims.add_dims(5);
  for (int64_t d : {int64_t{0}, int64_t{0}, heads, int64_t{3}, size}) dims.add_int64_data(d);
  *graph.add_initializer() = std::move(dims);
  std::vector<Node> nodes(2);
  Node& mm = nodes[0];
  mm.set_op_type("MatMul");
  mm.set_name(UniqueNodeName(graph, mha.name() + "/QkvMatMul"));
  mm.add_input(p[0].x);
  mm.add_input(w);
  mm.add_output(UniqueValueName(graph, mha.name() + "/qkv_matmul"));
  Node& reshape = nodes[1];
  reshape.set_op_type("Reshape");
  reshape.set_name(UniqueNodeName(graph, mha.name() + "/QkvReshape"));
  reshape.add_input(mm.output(0));
  reshape.add_input(shape);
  reshape.add_output(UniqueValueName(graph, mha.name() + "/qkv"));
  for (const auto& name : {reshape.output(0), std::string(), std::string(), b}) mha.add_input(name);
  return nodes;
}

std::optional<Match> MatchAt(const GraphIndex& g, const Node& softmax) {
  Match m;
  const int64_t axis = IntAttr(softmax, "axis", -1);
  if (axis != -1 && axis != 3) return std::nullopt;
  m.nodes.insert(&softmax);
  // Upwards: [Add(mask)] <- [Div|Mul(c)] <- MatMul.
  std::set<const Node*> upper;
  const Node* qk = nullptr;
  if (const Node* add = g.ProducerIs(softmax.input(0), "Add")) {
    for (int i = 0; i < 2 && qk == nullptr; ++i) {
      upper.clear();
      m.scale = 1.0;
      qk = ScoresMatMul(g, add->input(i), upper, m.scale);
      if (qk != nullptr) m.mask = add->input(1 - i);
    }
    upper.insert(add);
  } else {
    qk = ScoresMatMul(g, softmax.input(0), upper, m.scale);
  }
  if (qk == nullptr) return std::nullopt;
  m.nodes.insert(upper.begin(), upper.end());
  auto [cq, q4] = StripScale(g, qk->input(0), m.nodes);
  auto [ck, k4] = StripScale(g, qk->input(1), m.nodes);
  m.scale *= cq * ck;
  auto q = SplitHeads(g, q4, {0, 2, 1, 3}, m.nodes);
  auto k = KeyHeads(g, k4, m.nodes);
  if (!q || !k) return std::nullopt;
  // Downwards: [Where(IsNaN(p), 0, p)] -> MatMul(., v4) -> Transpose -> Reshape.
  std::string probs = softmax.output(0);
  const auto& readers = g.Consumers(probs);
  if (readers.size() == 2 && !g.IsGraphOutput(probs)) {
    const Node* isnan = nullptr;
    const Node* where = nullptr;
    for (const Node* r : readers) {
      if (IsOnnxOp(*r, "IsNaN")) isnan = r;
      if (IsOnnxOp(*r, "Where")) where = r;
    }
    if (isnan == nullptr || where == nullptr || where->input_size() != 3 || where->input(0) != isnan->output(0) ||
        where->input(2) != probs || OnlyConsumer(g, isnan->output(0)) != where) {
      return std::nullopt;
    }
    auto zero = g.FloatValues(where->input(1));
    if (!zero || zero->size() != 1 || zero->front() != 0) return std::nullopt;
    m.nodes.insert(isnan);
    m.nodes.insert(where);
    probs = where->output(0);
  }
  const Node* pv = OnlyConsumer(g, probs);
  if (pv == nullptr || !IsOnnxOp(*pv, "MatMul") || pv->input(0) != probs) return std::nullopt;
  m.nodes.insert(pv);
  auto v = SplitHeads(g, pv->input(1), {0, 2, 1, 3}, m.nodes);
  if (!v) return std::nullopt;
  const Node* merge = OnlyConsumer(g, pv->output(0));
  if (merge == nullptr || !IsOnnxOp(*merge, "Transpose") || IntsAttr(*merge, "perm") != std::vector<int64_t>{0, 2, 1, 3}) {
    return std::nullopt;
  }
  m.nodes.insert(merge);
  m.out = OnlyConsumer(g, merge->output(0));
  if (m.out == nullptr || !IsOnnxOp(*m.out, "Reshape") || m.out->input(0) != merge->output(0)) return std::nullopt;
  if (auto last = g.KnownShapeTail(m.out->input(1), 1); !last || ((*last)[0] != q->heads * q->head_size && (*last)[0] != -1)) {
    return std::nullopt;
  }
  m.nodes.insert(m.out);
  if (q->heads != k->heads || q->heads != v->heads || q->head_size != k->head_size || q->head_size != v->head_size) {
    return std::nullopt;
  }
  // Every value inside the pattern is read only inside it.
  for (const Node* n : m.nodes) {
    if (n == m.out) continue;
    for (const auto& o : n->output()) {
      if (g.IsGraphOutput(o)) return std::nullopt;
      for (const Node* r : g.Consumers(o)) {
        if (!m.nodes.count(r)) return std::nullopt;
      }
    }
  }
  m.q = *q;
  m.k = *k;
  m.v = *v;
  return m;
}

std::string FusedName(const ::onnx::GraphProto& graph, const Node& softmax) {
  std::string name = softmax.name();
  const auto at = name.rfind("Softmax");
  name = at == std::string::npos ? name + "/MultiHeadAttention" : name.replace(at, 7, "MultiHeadAttention");
  return UniqueNodeName(graph, name.empty() ? "MultiHeadAttention" : name);
}

}  // namespace

int FuseAttention(::onnx::GraphProto& graph, std::vector<std::string>& fused, const FusionOptions& options) {
  int made = 0;
  for (bool again = true; again;) {
    again = false;
    GraphIndex g(graph);
    for (const auto& n : graph.node()) {
      if (!IsOnnxOp(n, "Softmax")) continue;
      auto m = MatchAt(g, n);
      if (!m) continue;
      Node mha;
      mha.set_op_type("MultiHeadAttention");
      mha.set_domain("com.microsoft");
      mha.set_name(FusedName(graph, n));
      std::vector<Node> nodes;  // the packed projection, when made; then the fused node
      auto p = options.pack_qkv ? PackableProjections(g, graph, *m) : std::nullopt;
      if (p) {
        nodes = PackProjections(graph, *p, *m, mha);
      } else {
        for (const auto& in : {m->q.input, m->k.input, m->v.input}) mha.add_input(in);
      }
      if (!m->mask.empty()) {
        while (mha.input_size() < 5) mha.add_input("");
        mha.add_input(m->mask);
      }
      mha.add_output(m->out->output(0));
      auto* heads = mha.add_attribute();
      heads->set_name("num_heads");
      heads->set_type(::onnx::AttributeProto::INT);
      heads->set_i(m->q.heads);
      auto* scale = mha.add_attribute();
      scale->set_name("scale");
      scale->set_type(::onnx::AttributeProto::FLOAT);
      scale->set_f(static_cast<float>(m->scale));
      fused.push_back(mha.name());
      nodes.push_back(std::move(mha));
      ReplaceNodes(graph, m->nodes, std::move(nodes));
      ++made;
      again = true;  // the index is stale: match again from the top
      break;
    }
  }
  return made;
}

}  // namespace ortgpu::fusion
