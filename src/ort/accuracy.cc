#include "ort/accuracy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
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

namespace ortgpu {
namespace {

bool IsFloating(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kDouble || t == DataType::kBfloat16;
}

// Indices of the k largest values of row [begin, begin + n), NaN last.
std::vector<int64_t> TopK(const std::vector<double>& v, int64_t begin, int64_t n, int64_t k) {
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  auto greater = [&](int64_t a, int64_t b) {
    const double x = v[begin + a], y = v[begin + b];
    if (std::isnan(x)) return false;
    if (std::isnan(y)) return true;
    return x > y;
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), greater);
  idx.resize(k);
  return idx;
}

OutputDeviation Deviation(const Tensor& a, const Tensor& ref) {
  OutputDeviation d;
  d.name = ref.name;
  d.shape = ShapeToString(ref.shape);
  if (a.shape != ref.shape) {
    d.note = fmt::format("shape {} but the reference's is {}", ShapeToString(a.shape), d.shape);
    return d;
  }
  if (ref.dtype == DataType::kString || ElementSize(ref.dtype) == 0 || ElementSize(a.dtype) == 0 ||
      a.dtype == DataType::kString || ref.dtype == DataType::kComplex64 || ref.dtype == DataType::kComplex128) {
    d.note = "not numeric";
    return d;
  }
  d.compared = true;
  const int64_t n = ref.element_count();
  std::vector<double> x(n), r(n);
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = ElementAsDouble(a, i);
    r[i] = ElementAsDouble(ref, i);
    if (std::isfinite(r[i])) scale = std::max(scale, std::fabs(r[i]));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(r[i]) && !std::isfinite(x[i])) {
      (std::isnan(x[i]) ? d.new_nan : d.new_inf)++;
      continue;
    }
    if (!std::isfinite(r[i]) || !std::isfinite(x[i])) continue;
    const double err = std::fabs(x[i] - r[i]);
    d.max_abs_error = std::max(d.max_abs_error, err);
    if (scale > 0) d.max_rel_error = std::max(d.max_rel_error, err / scale);
  }
  d.rows = ref.shape.size() >= 2 ? ref.shape[0] : 1;
  const int64_t row_len = d.rows > 0 ? n / d.rows : 0;
  double cosine_sum = 0;
  for (int64_t row = 0; row < d.rows; ++row) {
    double dot = 0, nx = 0, nr = 0;
    bool finite = true;
    for (int64_t i = row * row_len; i < (row + 1) * row_len; ++i) {
      if (!std::isfinite(x[i]) || !std::isfinite(r[i])) {
        finite = finite && !std::isfinite(r[i]) && x[i] == r[i];  // equal infinities agree
        continue;
      }
      dot += x[i] * r[i];
      nx += x[i] * x[i];
      nr += r[i] * r[i];
    }
    // Two zero rows agree; a zero row against a non-zero one does not.
    double cosine = (nx == 0 && nr == 0) ? 1.0 : (nx == 0 || nr == 0) ? 0.0 : dot / std::sqrt(nx * nr);
    if (!finite) cosine = 0;
    cosine = std::min(cosine, 1.0);
    d.cosine_min = row == 0 ? cosine : std::min(d.cosine_min, cosine);
    cosine_sum += cosine;
  }
  if (d.rows > 0) d.cosine_mean = cosine_sum / static_cast<double>(d.rows);
  if (ref.shape.size() == 2 && ref.shape[1] >= 2 && IsFloating(ref.dtype)) {
    d.classifier = true;
    const int64_t classes = ref.shape[1];
    const int64_t k = std::min<int64_t>(5, classes);
    int64_t agree = 0;
    double overlap = 0;
    for (int64_t row = 0; row < d.rows; ++row) {
      const auto top_a = TopK(x, row * classes, classes, k);
      const auto top_r = TopK(r, row * classes, classes, k);
      if (top_a[0] == top_r[0]) ++agree;
      int64_t common = 0;
      for (int64_t c : top_r) common += std::count(top_a.begin(), top_a.end(), c);
      overlap += static_cast<double>(common) / static_cast<double>(k);
    }
    if (d.rows > 0) {
      d.top1_agreement = static_cast<double>(agree) / static_cast<double>(d.rows);
      d.top5_overlap = overlap / static_cast<double>(d.rows);
    }
  }
  return d;
}

}  // namespace

DeviationReport CompareDeviation(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference) {
  DeviationReport report;
  for (const Tensor& ref : reference) {
    const Tensor* a = nullptr;
    for (const Tensor& t : actual) {
      if (t.name == ref.name) a = &t;
    }
    if (a == nullptr) {
      OutputDeviation d;
      d.name = ref.name;
      d.shape = ShapeToString(ref.shape);
      d.note = "missing from the outputs";
      report.outputs.push_back(std::move(d));
      continue;
    }
    report.outputs.push_back(Deviation(*a, ref));
  }
  return report;
}

Expected<PrecisionBudget> ParsePrecisionBudget(std::string_view text) {
  PrecisionBudget b;
  std::stringstream in{std::string(text)};
  std::string item;
  const char* keys = "cosine=MIN, top1=MIN (a share, 0.99), rel=MAX (0 = unbounded), nonfinite=allow|deny";
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument(fmt::format("--budget '{}': expected KEY=VALUE; keys: {}", item, keys));
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "nonfinite") {
      if (value != "allow" && value != "deny") {
        return InvalidArgument(fmt::format("--budget nonfinite={}: expected allow or deny", value));
      }
      b.allow_nonfinite = value == "allow";
      continue;
    }
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      return InvalidArgument(fmt::format("--budget {}={}: '{}' is not a number", key, value, value));
    }
    if (key == "cosine" || key == "top1") {
      if (v < 0 || v > 1) return InvalidArgument(fmt::format("--budget {}={}: a share between 0 and 1 is expected", key, value));
      (key == "cosine" ? b.min_cosine : b.min_top1) = v;
    } else if (key == "rel") {
      if (v < 0) return InvalidArgument(fmt::format("--budget rel={}: must be >= 0", value));
      b.max_rel_error = v;
    } else {
      return InvalidArgument(fmt::format("--budget: unknown key '{}'; keys: {}", key, keys));
    }
  }
  return b;
}

std::string DescribeBudget(const PrecisionBudget& b) {
  std::string s = fmt::format("row cosine >= {}, {}, top-1 agreement >= {}%", b.min_cosine,
                              b.allow_nonfinite ? "NaN/Inf allowed" : "no new NaN/Inf", b.min_top1 * 100);
  if (b.max_rel_error > 0) s += fmt::format(", max relative error <= {}", b.max_rel_error);
  return s;
}

std::vector<std::string> BudgetViolations(const DeviationReport& report, const PrecisionBudget& b) {
  std::vector<std::string> out;
  for (const auto& d : report.outputs) {
    if (!d.compared) {
      if (d.note != "not numeric") out.push_back(fmt::format("output '{}': {}", d.name, d.note));
      continue;
    }
    if (!b.allow_nonfinite && d.new_nan + d.new_inf > 0) {
      out.push_back(fmt::format("output '{}': {} NaN and {} Inf where fp32 gives finite values", d.name, d.new_nan, d.new_inf));
    }
    if (d.cosine_min < b.min_cosine) {
      out.push_back(fmt::format("output '{}': row cosine {:.6f} < {}", d.name, d.cosine_min, b.min_cosine));
    }
    if (d.classifier && d.top1_agreement < b.min_top1) {
      out.push_back(fmt::format("output '{}': top-1 agreement {:.1f}% < {}%", d.name, d.top1_agreement * 100, b.min_top1 * 100));
    }
    if (b.max_rel_error > 0 && d.max_rel_error > b.max_rel_error) {
      out.push_back(fmt::format("output '{}': max relative error {:.3g} > {}", d.name, d.max_rel_error, b.max_rel_error));
    }
  }
  return out;
}

}  // namespace ortgpu
