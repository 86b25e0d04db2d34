#include "tune/pruning.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace ortgpu::tune {

void LatencyCurves::Add(const EngineChoice& engine, int64_t batch, double latency_ms) {
  curves_[engine.Key()][batch] = latency_ms;
}

std::optional<double> LatencyCurves::LatencyMs(const EngineChoice& engine, int64_t batch) const {
  auto curve = curves_.find(engine.Key());
  if (curve == curves_.end()) return std::nullopt;
  const std::map<int64_t, double>& points = curve->second;
  auto above = points.lower_bound(batch);
  if (above == points.end()) return std::nullopt;
  if (above->first == batch) return above->second;
  if (above == points.begin()) return std::nullopt;
  auto below = std::prev(above);
  const double t = (std::log(static_cast<double>(batch)) - std::log(static_cast<double>(below->first))) /
                   (std::log(static_cast<double>(above->first)) - std::log(static_cast<double>(below->first)));
  return std::exp(std::log(below->second) + t * (std::log(above->second) - std::log(below->second)));
}

bool LatencyCurves::Measured(const EngineChoice& engine, int64_t batch) const {
  auto curve = curves_.find(engine.Key());
  return curve != curves_.end() && curve->second.count(batch) > 0;
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
    return NotFound(fmt::format("no in-process latency for {} at batch {} (not measured, outside the measured "
                                "batches, or its measurement failed)",
                                c.engine.Key(), c.batch));
  }
  ServedBounds b;
  b.batch_ms = *ms;
  b.interpolated = !curves.Measured(c.engine, c.batch);
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

double EstimateGoodput(const ServedCandidate& c, const LatencyCurves& curves, const EstimateOptions& o) {
  const std::optional<double> best_rate = curves.BestItemsPerSecond(c.engine);
  if (!best_rate || *best_rate <= 0 || !curves.LatencyMs(c.engine, c.batch)) return 0;
  const double b = static_cast<double>(c.batch);
  const int slots = std::max(1, c.instances * c.workers_per_instance);
  const double delay_ms = static_cast<double>(c.max_queue_delay_us) / 1000.0;
  double best = 0;
  for (int conns = 1;; conns = std::min(o.max_concurrency, conns * 2)) {
    const double n = static_cast<double>(conns);
    // Without a queue delay an idle worker takes whatever is queued, so every
    // slot runs a batch and the rows split over them (H200 run n1: [32] on 2
    // instances x 2 workers ran 17-row batches at 64 connections). With one,
    // a worker waits for its batch to fill, and only the slots needed work,
    // when the delay lets a batch's rows come back: n connections each send
    // about once per full batch's run, so about n x delay / run rows arrive
    // within the delay. A shorter delay does no better than none (H200 run
    // v1: [32] with 500 us on 2 x 2 at 64 connections, 4,793 items/s: 12.5
    // rows come back in 500 us of a 2.56 ms batch; [16] with 2 ms, 10,063).
    const std::optional<double> full_ms = curves.LatencyMs(c.engine, c.batch);
    const bool fills = delay_ms > 0 && full_ms && *full_ms > 0 && n * delay_ms / *full_ms >= b;
    const int busy = fills ? std::clamp(static_cast<int>(std::ceil(n / b)), 1, slots) : std::clamp(conns, 1, slots);
    const double rows = std::min(b, n / busy);
    // Rows executed: padded to the batch, or the rows themselves, at least 1.
    const double executed = c.pad_to_preferred ? b : std::max(1.0, std::floor(rows));
    const std::optional<double> alone_ms = curves.LatencyMs(c.engine, static_cast<int64_t>(executed));
    if (alone_ms) {
      // The GPU's bound: the batch's own rate, raised by overlap, at most the
      // engine's best, of which padding wastes its share. Batches that take
      // GPU turns overlap only two deep (one replays while the other's
      // copies run): run q2 served 2 instances x 2 workers 7% below 2 x 1
      // with CUDA graphs, and run u1's [16] on 2 x 1 14% above the batch's
      // own in-process rate.
      const int overlapping = (c.TakesGpuTurns() ? std::min(busy, 2) : busy) - 1;
      const double rate = std::min(*best_rate, executed * 1000.0 / *alone_ms * (1 + o.overlap_per_batch * overlapping));
      const double gpu_bound = rate * rows / executed;
      // The slots' bound: each batch also spends host_fraction of its
      // latency outside the GPU, which only another batch in flight fills.
      const double slot_bound = busy * rows * 1000.0 / (*alone_ms * (1 + o.host_fraction));
      const double items_per_s = std::min(gpu_bound, slot_bound);
      const double mean_ms = n * 1000.0 / items_per_s + (rows < b ? delay_ms : 0.0);
      if (o.p99_over_mean * mean_ms <= o.latency_budget_ms) best = std::max(best, items_per_s);
    }
    if (conns >= o.max_concurrency) break;
  }
  return best * (c.pad_to_preferred ? 1.0 : o.unpadded_factor);
}

}  // namespace ortgpu::tune
