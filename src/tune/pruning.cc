#include "tune/pruning.h"

#include <algorithm>

#include <fmt/format.h>

namespace ortgpu::tune {

void LatencyCurves::Add(const EngineChoice& engine, int64_t batch, double latency_ms) {
  curves_[engine.Key()][batch] = latency_ms;
}

std::optional<double> LatencyCurves::LatencyMs(const EngineChoice& engine, int64_t batch) const {
  auto curve = curves_.find(engine.Key());
  if (curve == curves_.end()) return std::nullopt;
  auto point = curve->second.find(batch);
  if (point == curve->second.end()) return std::nullopt;
  return point->second;
}

std::optional<double> LatencyCurves::BestItemsPerSecond(const EngineChoice& engine) const {
  auto curve = curves_.find(engine.Key());
  if (curve == curves_.end() || curve->second.empty()) return std::nullopt;
  double best = 0;
  for (const auto& [batch, ms] : curve->second) best = std::max(best, static_cast<double>(batch) * 1000.0 / ms);
  return best;
}

Expected<ServedBounds> BoundsFor(const ServedCandidate& c, const LatencyCurves& curves) {
  const std::optional<double> ms = curves.LatencyMs(c.engine, c.batch);
  if (!ms) {
    return NotFound(fmt::format("no in-process latency for {} at batch {} (not measured, or its measurement failed)",
                                c.engine.Key(), c.batch));
  }
  ServedBounds b;
  b.ceiling_items_per_s = std::min(c.instances * static_cast<double>(c.batch) * 1000.0 / *ms,
                                   curves.BestItemsPerSecond(c.engine).value_or(0));
  b.floor_ms = *ms + static_cast<double>(c.max_queue_delay_us) / 1000.0;
  return b;
}

std::string CeilingBelowBest(const ServedBounds& bounds, double best_goodput_so_far) {
  if (bounds.ceiling_items_per_s >= best_goodput_so_far) return "";
  return fmt::format("ceiling {:.1f} items/s (from the in-process curve) is below the best goodput measured so far, "
                     "{:.1f} items/s",
                     bounds.ceiling_items_per_s, best_goodput_so_far);
}

PruneResult Prune(const std::vector<ServedCandidate>& candidates, const LatencyCurves& curves,
                  double latency_budget_ms, double best_goodput_so_far) {
  PruneResult out;
  for (const ServedCandidate& c : candidates) {
    Expected<ServedBounds> bounds = BoundsFor(c, curves);
    if (!bounds.ok()) {
      out.dropped.push_back({c.Key(), bounds.status().message()});
      continue;
    }
    if (bounds->floor_ms > latency_budget_ms) {
      out.dropped.push_back({c.Key(), fmt::format("latency floor {:.3f} ms (batch {} in-process plus a {} us queue "
                                                  "delay) exceeds the {:.3f} ms budget",
                                                  bounds->floor_ms, c.batch, c.max_queue_delay_us, latency_budget_ms)});
      continue;
    }
    if (std::string why = CeilingBelowBest(*bounds, best_goodput_so_far); !why.empty()) {
      out.dropped.push_back({c.Key(), std::move(why)});
      continue;
    }
    out.kept.push_back({c, *bounds});
  }
  std::stable_sort(out.kept.begin(), out.kept.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
    if (a.bounds.ceiling_items_per_s != b.bounds.ceiling_items_per_s) {
      return a.bounds.ceiling_items_per_s > b.bounds.ceiling_items_per_s;
    }
    return SimplerThan(a.candidate, b.candidate);
  });
  return out;
}

}  // namespace ortgpu::tune
