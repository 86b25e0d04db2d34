#include "ort/row_sets.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include <fmt/format.h>

namespace ortgpu {
namespace {

bool Floating(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kDouble || t == DataType::kBfloat16;
}

bool NamesScore(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("score") != std::string::npos;
}

// One output of the group: its two tensors, row width and tolerance.
struct Column {
  const Tensor* actual;
  const Tensor* reference;
  int64_t width = 1;  // elements per row
  double scale = 0;   // largest |reference| (the output's range)
  double tolerance = 0;
};

// The first element of two rows past tolerance, for a note:
// "'boxes' element 2: 150 vs 100 (tolerance 16)"; "" when none is.
std::string FirstDifference(const std::vector<Column>& columns, int64_t ref_row, int64_t act_row,
                            const RowSetLabels& labels) {
  for (const Column& c : columns) {
    for (int64_t e = 0; e < c.width; ++e) {
      const double r = ElementAsDouble(*c.reference, ref_row * c.width + e);
      const double x = ElementAsDouble(*c.actual, act_row * c.width + e);
      const bool nan_differs = std::isnan(r) != std::isnan(x);
      if (nan_differs || (!std::isnan(r) && !(std::fabs(x - r) <= c.tolerance))) {
        return fmt::format("'{}' element {}: {:.6g} on {} vs {:.6g} on {} (tolerance {:.3g})", c.reference->name, e, x,
                           labels.actual, r, labels.reference, c.tolerance);
      }
    }
  }
  return "";
}

// Largest |a - r| / tolerance over the two rows; nullopt when an element is
// past tolerance (or NaN on one side only).
std::optional<double> RowDistance(const std::vector<Column>& columns, int64_t ref_row, int64_t act_row) {
  double worst = 0;
  for (const Column& c : columns) {
    for (int64_t e = 0; e < c.width; ++e) {
      const double r = ElementAsDouble(*c.reference, ref_row * c.width + e);
      const double x = ElementAsDouble(*c.actual, act_row * c.width + e);
      if (std::isnan(r) || std::isnan(x)) {
        if (std::isnan(r) != std::isnan(x)) return std::nullopt;
        continue;
      }
      const double err = std::fabs(x - r);
      if (!(err <= c.tolerance)) return std::nullopt;
      worst = std::max(worst, c.tolerance > 0 ? err / c.tolerance : 0.0);
    }
  }
  return worst;
}

// Like RowDistance without the cut: how far apart two rows are, to name the
// nearest counterpart of a row that matched none.
double LooseDistance(const std::vector<Column>& columns, int64_t ref_row, int64_t act_row) {
  double worst = 0;
  for (const Column& c : columns) {
    for (int64_t e = 0; e < c.width; ++e) {
      const double r = ElementAsDouble(*c.reference, ref_row * c.width + e);
      const double x = ElementAsDouble(*c.actual, act_row * c.width + e);
      if (std::isnan(r) != std::isnan(x)) return std::numeric_limits<double>::infinity();
      if (std::isnan(r)) continue;
      worst = std::max(worst, std::fabs(x - r) / std::max(c.tolerance, 1e-300));
    }
  }
  return worst;
}

std::string OutputList(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

}  // namespace

RowSetMatch MatchRowSet(const std::vector<const Tensor*>& actual, const std::vector<const Tensor*>& reference,
                        const Tolerance& tolerance, const RowSetLabels& labels) {
  RowSetMatch m;
  if (reference.empty() || actual.size() != reference.size()) return m;
  m.reference_rows = reference[0]->shape[0];
  m.actual_rows = actual[0]->shape[0];
  std::vector<Column> columns;
  const Column* score = nullptr;
  for (size_t k = 0; k < reference.size(); ++k) {
    m.outputs.push_back(reference[k]->name);
    Column c{actual[k], reference[k]};
    for (size_t d = 1; d < reference[k]->shape.size(); ++d) c.width *= reference[k]->shape[d];
    // The range comes from the reference; from the run when the reference has no rows.
    const Tensor& range_of = m.reference_rows > 0 ? *reference[k] : *actual[k];
    for (int64_t i = 0; i < range_of.element_count(); ++i) {
      const double v = ElementAsDouble(range_of, i);
      if (std::isfinite(v)) c.scale = std::max(c.scale, std::fabs(v));
    }
    c.tolerance = tolerance.atol + tolerance.rtol * c.scale;
    columns.push_back(c);
  }
  // The score column: a rank-1 floating output, the one named *score* if several.
  std::vector<size_t> candidates;
  for (size_t k = 0; k < columns.size(); ++k) {
    if (columns[k].reference->shape.size() == 1 && Floating(columns[k].reference->dtype)) candidates.push_back(k);
  }
  for (size_t k : candidates) {
    if (score == nullptr && NamesScore(columns[k].reference->name)) score = &columns[k];
  }
  if (score == nullptr && candidates.size() == 1) score = &columns[candidates[0]];
  if (score != nullptr) m.score_output = score->reference->name;
  auto ref_score = [&](int64_t i) { return ElementAsDouble(*score->reference, i); };
  auto act_score = [&](int64_t j) { return ElementAsDouble(*score->actual, j); };
  // Narrow outputs first: most candidate rows fail on a box coordinate
  // before a wide output (a mask) is read.
  std::vector<Column> by_width = columns;
  std::stable_sort(by_width.begin(), by_width.end(),
                   [](const Column& a, const Column& b) { return a.width < b.width; });

  std::vector<int64_t> order(m.reference_rows);
  std::iota(order.begin(), order.end(), 0);
  if (score != nullptr) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ref_score(a) > ref_score(b); });
  }
  std::vector<bool> taken(m.actual_rows, false);
  bool reordered = false;
  double score_noise = 0;
  for (int64_t i : order) {
    int64_t best = -1;
    double best_distance = 0;
    for (int64_t j = 0; j < m.actual_rows; ++j) {
      if (taken[j]) continue;
      const auto d = RowDistance(by_width, i, j);
      if (d && (best < 0 || *d < best_distance)) {
        best = j;
        best_distance = *d;
      }
    }
    if (best < 0) {
      m.only_reference.push_back(i);
      continue;
    }
    taken[best] = true;
    ++m.matched;
    reordered = reordered || best != i;
    for (const Column& c : columns) {
      for (int64_t e = 0; e < c.width; ++e) {
        const double r = ElementAsDouble(*c.reference, i * c.width + e);
        const double x = ElementAsDouble(*c.actual, best * c.width + e);
        if (std::isnan(r) || std::isnan(x)) continue;
        m.max_abs_error = std::max(m.max_abs_error, std::fabs(x - r));
        if (c.scale > 0) m.max_rel_error = std::max(m.max_rel_error, std::fabs(x - r) / c.scale);
      }
    }
    if (score != nullptr) score_noise = std::max(score_noise, std::fabs(act_score(best) - ref_score(i)));
  }
  std::sort(m.only_reference.begin(), m.only_reference.end());
  for (int64_t j = 0; j < m.actual_rows; ++j) {
    if (!taken[j]) m.only_actual.push_back(j);
  }

  const std::string head = fmt::format("outputs {}{} compared as sets of rows: ", OutputList(m.outputs),
                                       labels.why.empty() ? "" : " (" + labels.why + ")");
  const std::string counts = fmt::format("{} rows matched of {} on {} and {} on {}", m.matched, m.reference_rows,
                                         labels.reference, m.actual_rows, labels.actual);
  if (m.only_actual.empty() && m.only_reference.empty()) {
    m.note = head + counts + (reordered ? " (in another order)" : "");
    return m;
  }
  const std::string unmatched =
      fmt::format("; {} only on {}, {} only on {}", m.only_actual.size(), labels.actual, m.only_reference.size(),
                  labels.reference);
  // The highest-scored unmatched row (or, without scores, the first).
  bool top_is_reference = !m.only_reference.empty();
  int64_t top = top_is_reference ? m.only_reference.front() : m.only_actual.front();
  double top_score = -std::numeric_limits<double>::infinity();
  if (score != nullptr) {
    auto consider = [&](int64_t row, double s, bool is_reference) {
      if (s <= top_score) return;
      top_score = s;
      top = row;
      top_is_reference = is_reference;
    };
    for (int64_t i : m.only_reference) consider(i, ref_score(i), true);
    for (int64_t j : m.only_actual) consider(j, act_score(j), false);
    double score_range = 0;
    double lowest_ref = std::numeric_limits<double>::infinity(), lowest_act = lowest_ref;
    for (int64_t i = 0; i < m.reference_rows; ++i) {
      lowest_ref = std::min(lowest_ref, ref_score(i));
      score_range = std::max(score_range, std::fabs(ref_score(i)));
    }
    for (int64_t j = 0; j < m.actual_rows; ++j) {
      lowest_act = std::min(lowest_act, act_score(j));
      score_range = std::max(score_range, std::fabs(act_score(j)));
    }
    m.cut_off = std::min(lowest_ref, lowest_act);
    m.tie_margin = std::max(2 * score_noise, 1e-6 * score_range);
    if (top_score <= m.cut_off + m.tie_margin) {
      m.note = head + counts + unmatched +
               fmt::format(", all scored ('{}') within {:.3g} of the lowest score either run kept ({:.6g}): near-ties "
                           "where the lists end, which rounding may put on either side",
                           m.score_output, m.tie_margin, m.cut_off);
      return m;
    }
  }
  m.passed = false;
  // The nearest counterpart of the top unmatched row on the other side.
  std::string nearest;
  double nearest_distance = std::numeric_limits<double>::infinity();
  const int64_t others = top_is_reference ? m.actual_rows : m.reference_rows;
  int64_t near_row = -1;
  for (int64_t o = 0; o < others; ++o) {
    const double d = top_is_reference ? LooseDistance(columns, top, o) : LooseDistance(columns, o, top);
    if (d < nearest_distance) {
      nearest_distance = d;
      near_row = o;
    }
  }
  if (near_row >= 0) {
    const std::string diff = top_is_reference ? FirstDifference(columns, top, near_row, labels)
                                              : FirstDifference(columns, near_row, top, labels);
    nearest = fmt::format("; its nearest {} row {} differs in {}", top_is_reference ? labels.actual : labels.reference,
                          near_row, diff);
  } else {
    nearest = fmt::format("; {} has no rows", top_is_reference ? labels.actual : labels.reference);
  }
  const std::string side = top_is_reference ? labels.reference : labels.actual;
  if (score != nullptr) {
    m.note = head + counts + unmatched +
             fmt::format("; {} row {} (score {:.6g}) matches nothing and is scored above the lowest score either run "
                         "kept ({:.6g}) by more than the tie margin {:.3g}: a real difference in what was detected",
                         side, top, top_score, m.cut_off, m.tie_margin) +
             nearest;
  } else {
    m.note = head + counts + unmatched +
             fmt::format("; without a score output every row must match; {} row {} matches nothing", side, top) +
             nearest;
  }
  return m;
}

RowSets RowSetsFor(const std::vector<TensorInfo>& outputs, const onnx::GraphDerivation* graph) {
  RowSets rows;
  if (graph != nullptr) {
    for (const auto& [output, op] : graph->selected_outputs) rows.outputs[output] = "after " + op;
  }
  for (const auto& out : outputs) {
    if (!out.shape.empty() && out.shape[0] < 0) rows.dynamic_leading_dim.insert(out.name);
  }
  return rows;
}

}  // namespace ortgpu
