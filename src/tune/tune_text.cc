// RenderTuneText (tune.h): what was measured and why the winner won, stage
// by stage, as text.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "tune/tune.h"

namespace ortgpu::tune {
namespace {

// Long lists (what pruning left out, what time left unmeasured) are cut here.
constexpr size_t kListed = 30;

std::string Figures(const std::vector<double>& xs) {
  std::string out;
  for (double x : xs) out += fmt::format("{}{:.1f}", out.empty() ? "" : ", ", x);
  return out;
}

std::string Precisions(const SearchResult& s) {
  std::string out;
  for (const PrecisionOutcome& p : s.precisions) {
    out += fmt::format("precision {}: ", PrecisionName(p.precision));
    if (!p.error.empty()) {
      out += "conversion failed: " + p.error + "\n";
    } else if (p.verdict) {
      const PrecisionVerdict& v = *p.verdict;
      out += fmt::format("{} the accuracy budget (min cosine {:.6f}, max rel error {:.4f}{}){}\n",
                         v.within_budget ? "within" : "outside", v.min_cosine, v.max_rel_error,
                         v.top1 ? fmt::format(", top-1 {:.1f}%", *v.top1 * 100) : "",
                         v.detail.empty() ? "" : "; " + v.detail);
    } else {
      out += "not judged\n";
    }
  }
  return out;
}

std::string Screening(const SearchResult& s) {
  if (s.screening.empty() && !s.screened) return "";
  std::string out = "screening in-process (p50 per batch at one batch size; a flip is kept when faster by more than "
                    "the noise, at least 2%):\n";
  for (const ScreenStep& st : s.screening) {
    out += fmt::format("  {}: {} -> {}: ", KnobName(st.knob), st.from.Key(), st.to.Key());
    if (st.to_ms <= 0) {
      out += st.note + "\n";
      continue;
    }
    out += fmt::format("{:.3f} -> {:.3f} ms ({:+.1f}%, needed {:.1f}%){}\n", st.from_ms, st.to_ms, -st.gain * 100,
                       st.threshold * 100, st.kept ? ": kept" : "; " + st.note);
  }
  if (s.screened) out += "engine choice: " + s.screened->Key() + "\n";
  return out;
}

std::string Curves(const SearchResult& s) {
  std::string out;
  for (const EngineChoice& e : s.curve_engines) {
    std::string points;
    for (int64_t b : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
      if (!s.curves.Measured(e, b)) continue;
      points += fmt::format("{}batch {}: {:.3f} ms", points.empty() ? "" : ", ", b, *s.curves.LatencyMs(e, b));
    }
    out += fmt::format("  {}: {}; best {:.1f} items/s\n", e.Key(), points, s.curves.BestItemsPerSecond(e).value_or(0));
  }
  return out.empty() ? "" : "latency curve in-process (one batch, p50):\n" + out;
}

std::string Served(const SearchResult& s) {
  if (s.served.empty()) return "";
  std::string out = "served candidates, in the order served (goodput within the budget, items/s):\n";
  for (const ServedOutcome& o : s.served) {
    out += fmt::format("  {}: predicted {:.1f}, ceiling {:.1f}, floor {:.3f} ms{}; ", o.candidate.Key(), o.predicted,
                       o.bounds.ceiling_items_per_s, o.bounds.floor_ms, o.bounds.interpolated ? " (interpolated)" : "");
    if (!o.error.empty()) {
      out += "failed: " + o.error + "\n";
      continue;
    }
    out += fmt::format("goodput [{}]", Figures(o.goodputs));
    if (o.first.concurrency > 0) out += fmt::format(" at {} connections, p99 {:.3f} ms", o.first.concurrency, o.last_p99_ms);
    if (o.first.load_s) out += fmt::format(", loaded in {:.1f} s", *o.first.load_s);
    if (o.first.errors > 0) out += fmt::format(", {} failed requests", o.first.errors);
    if (!o.anomaly.empty()) out += fmt::format("; {}: {}", o.anomalous ? "ANOMALOUS" : "anomaly resolved", o.anomaly);
    out += "\n";
  }
  return out;
}

std::string Listed(const std::string& title, const std::vector<Rejected>& items) {
  if (items.empty()) return "";
  std::string out = fmt::format("{}: {}\n", title, items.size());
  for (size_t i = 0; i < items.size() && i < kListed; ++i) out += "  " + items[i].candidate + ": " + items[i].reason + "\n";
  if (items.size() > kListed) out += fmt::format("  ... and {} more\n", items.size() - kListed);
  return out;
}

std::string Grid(const SearchResult& s) {
  if (!s.grid) return "";
  const GridResult& g = *s.grid;
  std::string out = fmt::format("grid ({} of {} candidates measured{}):\n", g.measured, g.points.size(),
                                g.complete ? "" : "; incomplete: a rerun with the same history continues it");
  for (const GridPoint& p : g.points) {
    out += "  " + p.candidate.Key() + ": ";
    out += p.goodput ? fmt::format("{:.1f} items/s", *p.goodput) : p.error.empty() ? "not measured" : "failed: " + p.error;
    out += "\n";
  }
  if (g.best) out += fmt::format("grid best: {}: {:.1f} items/s\n", g.best->Key(), g.best_goodput);
  if (g.ratio > 0) {
    out += fmt::format("tune's winner reaches {:.1f}% of the grid's best ({:.1f} of {:.1f} items/s){}\n", g.ratio * 100,
                       g.winner_goodput, g.best_goodput, g.complete ? "" : " so far");
  }
  return out;
}

}  // namespace

std::string RenderTuneText(const TuneReport& report) {
  const SearchResult& s = report.search;
  std::string out;
  for (const auto& w : report.warnings) out += "warning: " + w + "\n";
  out += fmt::format("measurements: {} new, {} from the history ({}); {:.0f} s\n", s.evaluations, s.reused,
                     report.history_path, s.wall_s);
  out += Precisions(s);
  out += Screening(s);
  out += Curves(s);
  out += Served(s);
  out += Listed("not measured", s.unmeasured);
  out += Listed("left out", s.rejected);
  out += Grid(s);
  for (const std::string& n : s.notes) out += "note: " + n + "\n";
  if (!s.winner) {
    out += "no winner: no served candidate met the latency budget; raise --latency-budget-ms\n";
    return out;
  }
  out += "winner: " + s.winner->Key() + "\n";
  for (const ServedOutcome& o : s.served) {
    if (!(o.candidate == *s.winner) || o.goodputs.empty()) continue;
    out += fmt::format("winner's goodput: {:.1f} items/s (mean of {}), p99 {:.3f} ms at {} connections{}\n",
                       MeanInterval(o.goodputs, 0.95).mean, o.goodputs.size(), o.last_p99_ms, o.first.concurrency,
                       o.first.load_s ? fmt::format(", loaded in {:.1f} s", *o.first.load_s) : "");
  }
  out += "why: " + s.decision.reason + "\n";
  out += "written: " + report.config_path + "\n";
  return out;
}

}  // namespace ortgpu::tune
