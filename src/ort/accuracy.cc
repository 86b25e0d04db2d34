#include "ort/accuracy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "ort/row_sets.h"

namespace ortgpu {
namespace {

class Judge {
 public:
  explicit Judge(Accuracy& acc) : acc_(acc) {}
  void Fail(std::string note) {
    if (acc_.passed) acc_.note = std::move(note);
    acc_.passed = false;
  }

 private:
  Accuracy& acc_;
};

bool Numeric(DataType t) {
  return ElementSize(t) != 0 && t != DataType::kComplex64 && t != DataType::kComplex128;
}

void CompareElements(const Tensor& a, const Tensor& ref, const Tolerance& tolerance, Accuracy& acc, Judge& judge) {
  if (a.dtype != ref.dtype || a.shape != ref.shape) {
    judge.Fail(fmt::format("output '{}' is {} {} but the reference is {} {}", ref.name, ShortName(a.dtype),
                           ShapeToString(a.shape), ShortName(ref.dtype), ShapeToString(ref.shape)));
    return;
  }
  if (ref.dtype == DataType::kString) {
    if (a.strings != ref.strings) judge.Fail("output '" + ref.name + "' has different strings");
    return;
  }
  if (!Numeric(ref.dtype)) {
    if (a.data != ref.data) judge.Fail("output '" + ref.name + "' differs bytewise");
    return;
  }
  const int64_t n = ref.element_count();
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double r = ElementAsDouble(ref, i);
    if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
  }
  for (int64_t i = 0; i < n; ++i) {
    const double x = ElementAsDouble(a, i);
    const double r = ElementAsDouble(ref, i);
    if (std::isnan(x) || std::isnan(r)) {
      if (std::isnan(x) != std::isnan(r)) judge.Fail(fmt::format("output '{}' element {}: {} vs reference {}", ref.name, i, x, r));
      continue;
    }
    const double abs_err = std::fabs(x - r);
    acc.max_abs_error = std::max(acc.max_abs_error, abs_err);
    if (scale > 0) acc.max_rel_error = std::max(acc.max_rel_error, abs_err / scale);
    if (!(abs_err <= tolerance.atol + tolerance.rtol * scale)) {
      judge.Fail(fmt::format("output '{}' element {}: {:.6g} vs reference {:.6g} (tolerance atol {} + rtol {} x output range {:.4g})",
                             ref.name, i, x, r, tolerance.atol, tolerance.rtol, scale));
    }
  }
}

// True when `a` and `ref` may be compared as sets of rows: RowSets names
// the output (or its symbolic leading dim is all that differs), both are
// numeric of one type and rank >= 1, and differ in the leading dim at most.
bool ComparedAsRows(const Tensor& a, const Tensor& ref, const RowSets& row_sets) {
  if (a.dtype != ref.dtype || !Numeric(ref.dtype) || ref.shape.empty() || a.shape.size() != ref.shape.size() ||
      !std::equal(a.shape.begin() + 1, a.shape.end(), ref.shape.begin() + 1)) {
    return false;
  }
  return row_sets.outputs.count(ref.name) > 0 ||
         (row_sets.dynamic_leading_dim.count(ref.name) > 0 && a.shape[0] != ref.shape[0]);
}

}  // namespace

Accuracy CompareOutputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference, const Tolerance& tolerance,
                        const RowSets& row_sets) {
  Accuracy acc;
  acc.checked = true;
  Judge judge(acc);
  // Row-set outputs grouped by their leading dims (reference, actual), in
  // model order; the others compared element by element.
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::pair<std::vector<const Tensor*>, std::vector<const Tensor*>>>>
      groups;
  for (const Tensor& ref : reference) {
    const Tensor* a = nullptr;
    for (const Tensor& t : actual) {
      if (t.name == ref.name) a = &t;
    }
    if (a == nullptr) {
      judge.Fail("output '" + ref.name + "' is missing");
      continue;
    }
    if (!ComparedAsRows(*a, ref, row_sets)) {
      CompareElements(*a, ref, tolerance, acc, judge);
      continue;
    }
    const std::pair<int64_t, int64_t> key{ref.shape[0], a->shape[0]};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.first.push_back(a);
    it->second.second.push_back(&ref);
  }
  for (const auto& [dims, group] : groups) {
    RowSetLabels labels{row_sets.actual_name, row_sets.reference_name, ""};
    for (const Tensor* t : group.second) {
      auto r = row_sets.outputs.find(t->name);
      if (r != row_sets.outputs.end() && !r->second.empty()) {
        labels.why = r->second;
        break;
      }
    }
    const RowSetMatch m = MatchRowSet(group.first, group.second, tolerance, labels);
    acc.max_abs_error = std::max(acc.max_abs_error, m.max_abs_error);
    acc.max_rel_error = std::max(acc.max_rel_error, m.max_rel_error);
    acc.row_set_notes.push_back(m.note);
    if (!m.passed) judge.Fail(m.note);
  }
  return acc;
}

}  // namespace ortgpu
