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
  // Growth: x2 until the budget breaks; the last growth step is `max` itself.
  for (double load = o.start; static_cast<int>(r.points.size()) < o.max_steps;) {
    ORTGPU_ASSIGN_OR_RETURN(bool ok, step(load));
    if (!ok) {
      bad = load;
      break;
    }
    good = load;
    if (load >= o.max) break;
    load = std::min(o.max, o.integer ? std::max(load * 2, load + 1) : load * 2);
  }
  if (!good) {
    r.note = fmt::format("even the first load ({:g}) breaks the budget of {:g} ms", o.start, o.budget_ms);
    return r;
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
