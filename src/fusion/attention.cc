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
// num_heads H and scale cq * ck * c (or 1/c for Div), writing `out`.
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

int FuseAttention(::onnx::GraphProto& graph, std::vector<std::string>& fused) {
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
      for (const auto& in : {m->q.input, m->k.input, m->v.input}) mha.add_input(in);
      if (!m->mask.empty()) {
        mha.add_input("");
        mha.add_input("");
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
      ReplaceNodes(graph, m->nodes, std::move(mha));
      ++made;
      again = true;  // the index is stale: match again from the top
      break;
    }
  }
  return made;
}

}  // namespace ortgpu::fusion
