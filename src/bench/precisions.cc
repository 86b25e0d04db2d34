#include "bench/precisions.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace ortgpu::bench {

namespace {

// In the enum's order.
constexpr std::array<std::string_view, 4> kPrecisionNames = {"fp32", "tf32", "fp16", "mixed"};

}  // namespace

std::string_view PrecisionName(Precision p) { return kPrecisionNames.at(static_cast<size_t>(p)); }

Expected<Precision> ParsePrecision(std::string_view text) {
  const auto* it = std::find(kPrecisionNames.begin(), kPrecisionNames.end(), text);
  if (it != kPrecisionNames.end()) return static_cast<Precision>(it - kPrecisionNames.begin());
  return InvalidArgument(fmt::format("--precision: unknown precision '{}'; valid: fp32 (TF32 off), tf32 (the CUDA "
                                     "default), fp16, mixed (fp16 with the nodes that break the budget kept fp32)",
                                     text));
}

Precision DefaultPrecision(Provider provider) { return provider == Provider::kCpu ? Precision::kFp32 : Precision::kTf32; }

Precision EffectivePrecision(Provider provider, Precision p) {
  return provider == Provider::kCpu && p == Precision::kTf32 ? Precision::kFp32 : p;
}

bool IsConverted(Precision p) { return p == Precision::kFp16 || p == Precision::kMixed; }

PrecisionAccuracy SummariseDeviation(const DeviationReport& deviation, const PrecisionBudget& budget) {
  PrecisionAccuracy a;
  a.checked = true;
  for (const auto& d : deviation.outputs) {
    if (!d.compared) continue;
    a.min_cosine = std::min(a.min_cosine, d.cosine_min);
    a.max_rel_error = std::max(a.max_rel_error, d.max_rel_error);
    if (d.classifier) a.top1_agreement = std::min(a.top1_agreement.value_or(1.0), d.top1_agreement);
  }
  a.violations = BudgetViolations(deviation, budget);
  a.within_budget = a.violations.empty();
  return a;
}

PrecisionAccuracy ReferenceAccuracy() {
  PrecisionAccuracy a;
  a.checked = true;
  a.reference = true;
  a.note = "fp32 is the reference";
  return a;
}

bool Recommendable(Precision p, const PrecisionAccuracy& accuracy) {
  if (accuracy.checked) return accuracy.within_budget;
  return !IsConverted(p);
}

std::string CosineCell(const PrecisionAccuracy& a) { return a.checked ? fmt::format("{:.6f}", a.min_cosine) : "-"; }

std::string RelErrorCell(const PrecisionAccuracy& a) { return a.checked ? fmt::format("{:.2g}", a.max_rel_error) : "-"; }

std::string Top1Cell(const PrecisionAccuracy& a) {
  return a.checked && a.top1_agreement ? fmt::format("{:.4g}%", *a.top1_agreement * 100) : "-";
}

std::string BudgetCell(const PrecisionAccuracy& a) {
  if (!a.checked) return "-";
  if (a.reference) return "ref";
  return a.within_budget ? "yes" : "NO";
}

std::string DescribeAccuracy(const PrecisionAccuracy& a) {
  if (!a.checked) return "accuracy not judged" + (a.note.empty() ? std::string() : " (" + a.note + ")");
  std::string s = fmt::format("min cosine {:.6g}, max rel error {:.2g}", a.min_cosine, a.max_rel_error);
  if (a.top1_agreement) s += fmt::format(", top-1 {:.4g}%", *a.top1_agreement * 100);
  return s;
}

}  // namespace ortgpu::bench
