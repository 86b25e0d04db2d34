#include <algorithm>

#include <fmt/format.h>

#include "bench/memory_report.h"
#include "bench/report.h"

namespace ortgpu::bench {
namespace {

std::string Status_(const ConfigResult& r) {
  if (!r.error.ok()) return "ERROR";
  if (r.accuracy.checked && !r.accuracy.passed) return "WRONG";
  const char* served = ServedByServe(r.config.variant.io) ? "" : " (reference: not servable)";
  const char* budget = r.precision_accuracy.checked && !r.precision_accuracy.within_budget ? " (outside the budget)" : "";
  return std::string(r.stats.stable ? "ok" : "unstable") + served + budget;
}

}  // namespace

std::vector<std::string> RecommendationLines(const BenchReport& report) {
  if (!report.recommendation) return {};
  const auto& rec = *report.recommendation;
  const bool any_served = std::any_of(report.results.begin(), report.results.end(), [](const ConfigResult& r) {
    return ServedByServe(r.config.variant.io);
  });
  auto describe = [&](const char* goal, const std::optional<Pick>& p, bool latency) {
    if (!p && !any_served) {
      return fmt::format("best {}: none: no configuration was measured in an I/O mode `ortgpu serve` runs; add "
                         "io=served or io=served-graph to --sweep-axes, or sweep with --io served",
                         goal);
    }
    if (!p) return fmt::format("best {}: none (no configuration serve runs succeeded)", goal);
    const auto& r = report.results[p->index];
    const std::string gain = p->has_baseline ? fmt::format("{:.2f}x the default", p->gain) : "no default measured there";
    std::string stability;
    if (p->unstable) stability = "; UNSTABLE: no stable configuration was measured, re-run with a longer --duration";
    if (p->faster_unstable) {
      stability = "; " + report.results[*p->faster_unstable].config.variant.name +
                  " measured faster but was unstable, so it is not recommended";
    }
    auto figure = [latency](const ConfigResult& x) {
      return latency ? fmt::format("p50 {:.4g} ms", x.stats.p50_ms) : fmt::format("{:.1f} items/s", x.stats.items_per_s);
    };
    std::string reference;
    if (p->faster_not_served) {
      const auto& f = report.results[*p->faster_not_served];
      reference = fmt::format("; {} at batch {}, concurrency {} measured {} but is not recommended: {}", f.config.variant.name,
                              f.config.batch, f.config.concurrency, figure(f), NotServedReason(f.config.variant.io));
    }
    std::string budget;
    if (p->faster_outside_budget) {
      const auto& f = report.results[*p->faster_outside_budget];
      budget = fmt::format("; {} measured {} but is not recommended: {}", f.config.variant.name, figure(f),
                           f.precision_accuracy.checked ? "outside the accuracy budget (" + f.precision_accuracy.violations.front() + ")"
                                                        : "its accuracy against fp32 was not judged");
    }
    const std::string traded = p->traded.empty() ? "" : "; " + p->traded;
    return fmt::format("best {}: {} at batch {}, concurrency {}: {} ({}{}{}{}{})", goal, r.config.variant.name, r.config.batch,
                       r.config.concurrency, figure(r), gain, traded, stability, reference, budget);
  };
  return {describe("latency", rec.latency, true), describe("throughput", rec.throughput, false)};
}

std::string RenderTable(const BenchReport& report) {
  std::string out = fmt::format("model {}  provider {}  ORT {}\n", report.model, ProviderName(report.provider), report.ort_version);
  size_t name_w = 7;
  for (const auto& r : report.results) name_w = std::max(name_w, r.config.variant.name.size());
  out += fmt::format("{:<{}} {:>5} {:>4} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>11} {:>9} {:>9} {:>8} {:>6} {:>6} {:>8} {:>9}  {}\n",
                     "variant", name_w, "batch", "conc", "prec", "p50 ms", "p90 ms", "p99 ms", "mean ms", "max ms", "runs/s",
                     "items/s", "max err", "cos min", "rel err", "top-1", "budget", "RSS MB", "GPU MB", "status");
  for (const auto& r : report.results) {
    const auto& c = r.config;
    if (!r.error.ok()) {
      out += fmt::format("{:<{}} {:>5} {:>4} {:>5}  ERROR: {}\n", c.variant.name, name_w, c.batch, c.concurrency,
                         PrecisionName(c.variant.precision), r.error.message());
      continue;
    }
    const auto& s = r.stats;
    const PrecisionAccuracy& pa = r.precision_accuracy;
    out += fmt::format("{:<{}} {:>5} {:>4} {:>5} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>10.1f} {:>11.1f} {:>9} {:>9} {:>8} {:>6} {:>6} {:>8.0f} {:>9}  {}\n",
                       c.variant.name, name_w, c.batch, c.concurrency, PrecisionName(c.variant.precision), s.p50_ms, s.p90_ms,
                       s.p99_ms, s.mean_ms, s.max_ms, s.runs_per_s, s.items_per_s,
                       r.accuracy.checked ? fmt::format("{:.2g}", r.accuracy.max_abs_error) : "-", CosineCell(pa),
                       RelErrorCell(pa), Top1Cell(pa), BudgetCell(pa), r.peak_rss_mb,
                       r.gpu_memory_mb ? fmt::format("{:.0f}", *r.gpu_memory_mb) : "n/a", Status_(r));
  }
  if (!report.results.empty() && report.results.front().error.ok()) {
    const auto& r = report.results.front();
    out += fmt::format("session creation {:.1f} ms, first run {:.3f} ms, CPU {:.0f}% of a core, memory: {}, {} runs, stddev {:.3f} ms, p95 {:.3f}, p99.9 {:.3f}\n",
                       r.session_create_ms, r.first_run_ms, r.cpu_utilisation, r.memory, r.stats.count, r.stats.stddev_ms,
                       r.stats.p95_ms, r.stats.p999_ms);
  }
  for (const auto& r : report.results) {
    if (r.accuracy.checked && !r.accuracy.passed) {
      out += fmt::format("ACCURACY FAILURE: {}: {} (max abs error {:.3g}, max rel error {:.3g})\n",
                         ConfigurationLabel(r.config), r.accuracy.note, r.accuracy.max_abs_error, r.accuracy.max_rel_error);
    }
  }
  out += RenderMemoryText(report.memory);
  if (!report.precision_budget.empty()) {
    out += "precision accuracy against fp32 (TF32 off): cos min, rel err, top-1; budget: " + report.precision_budget + "\n";
  }
  for (const auto& n : report.notes) out += "note: " + n + "\n";
  if (report.recommendation) {
    const auto& rec = *report.recommendation;
    for (const auto& line : RecommendationLines(report)) out += line + "\n";
    if (!rec.config_pbtxt.empty()) out += "config.pbtxt fragment:\n" + rec.config_pbtxt;
  }
  return out;
}

}  // namespace ortgpu::bench
