#include "perf/search.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ortgpu::perf {

Expected<BudgetResult> SearchLatencyBudget(const BudgetOptions& o,
                                           const std::function<Expected<SearchPoint>(double load)>& measure) {
  BudgetResult r;
  auto within = [&](const SearchPoint& p) { return !p.failed && p.latency_ms <= o.budget_ms; };
  auto step = [&](double load) -> Expected<bool> {
    ORTGPU_ASSIGN_OR_RETURN(SearchPoint p, measure(load));
    p.load = load;
    r.points.push_back(p);
    return within(p);
  };
  std::optional<double> good, bad;
  // Growth: x2 up to `max` (the last growth step is `max` itself), on past a
  // step that breaks the budget while throughput still grows by more than
  // kStillGrowing: latency need not grow with load. A padded batch runs as
  // full at one connection as at 64, and one slow request can break a p99 of
  // a few hundred (H200 run n1: ResNet-50 broke 20 ms at 2 connections and
  // held it at 64 with 35x the throughput). Growth stops at a broken step
  // whose throughput did not grow: the server is saturated.
  constexpr double kStillGrowing = 1.10;
  std::vector<std::pair<double, bool>> ladder;  // (load, within), ascending
  double last_throughput = 0;
  for (double load = o.start; static_cast<int>(r.points.size()) < o.max_steps;) {
    ORTGPU_ASSIGN_OR_RETURN(bool ok, step(load));
    ladder.emplace_back(load, ok);
    const double throughput = r.points.back().throughput;
    const bool growing = throughput > last_throughput * kStillGrowing;
    last_throughput = throughput;
    if (!ok && (!good || !growing)) break;
    if (ok) good = load;
    if (load >= o.max) break;
    load = std::min(o.max, o.integer ? std::max(load * 2, load + 1) : load * 2);
  }
  // The edge to bisect: above the within-budget load of most throughput,
  // the first load that broke the budget.
  double best_throughput = -1, best_load = 0;
  for (const SearchPoint& p : r.points) {
    if (within(p) && p.throughput > best_throughput) {
      best_throughput = p.throughput;
      best_load = p.load;
    }
  }
  if (best_throughput < 0) {
    r.note = fmt::format("even the first load ({:g}) breaks the budget of {:g} ms", o.start, o.budget_ms);
    return r;
  }
  good = best_load;
  for (const auto& [load, ok] : ladder) {
    if (load > best_load && !ok) {
      bad = load;
      break;
    }
  }
  if (bad) {
    auto narrow = [&] { return o.integer ? *bad - *good > 1 : *bad / *good > 1 + o.precision; };
    while (narrow() && static_cast<int>(r.points.size()) < o.max_steps) {
      const double mid = o.integer ? std::floor((*good + *bad) / 2) : (*good + *bad) / 2;
      ORTGPU_ASSIGN_OR_RETURN(bool ok, step(mid));
      (ok ? good : bad) = mid;
    }
  }
  // The best is the highest throughput within the budget, which near
  // saturation need not be the highest load.
  for (size_t i = 0; i < r.points.size(); ++i) {
    if (within(r.points[i]) && (!r.best || r.points[i].throughput > r.points[*r.best].throughput)) r.best = i;
  }
  r.note = bad ? fmt::format("budget {:g} ms holds at load {:g} and breaks at {:g}", o.budget_ms, *good, *bad)
               : fmt::format("budget {:g} ms holds up to the largest load tried ({:g}); raise the maximum to search further",
                             o.budget_ms, *good);
  return r;
}

}  // namespace ortgpu::perf
