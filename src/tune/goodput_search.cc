#include "tune/goodput_search.h"

#include <algorithm>

#include <fmt/format.h>

namespace ortgpu::tune {

Expected<GoodputSearch> SearchGoodput(const GoodputSearchOptions& o,
                                      const std::function<Expected<GoodputStep>(int concurrency, bool full)>& measure) {
  GoodputSearch r;
  auto within = [&](const GoodputStep& s) { return !s.failed && s.errors == 0 && s.p99_ms <= o.budget_ms; };
  auto step = [&](int conc, bool full) -> Expected<bool> {
    ORTGPU_ASSIGN_OR_RETURN(GoodputStep s, measure(conc, full));
    s.concurrency = conc;
    s.full = full;
    r.steps.push_back(s);
    return within(s);
  };
  const int max = std::max(1, o.max);
  int conc = std::clamp(o.start, 1, max);
  std::optional<int> good;
  std::optional<int> bad;
  ORTGPU_ASSIGN_OR_RETURN(bool ok, step(conc, false));
  const int start = conc;
  if (!ok) {
    // A repeat's start already breaks the budget: step down.
    while (conc > 1) {
      conc = std::max(1, conc / 2);
      ORTGPU_ASSIGN_OR_RETURN(bool down_ok, step(conc, false));
      if (down_ok) break;
    }
  }
  conc = start;
  // Growth, doubling up to the most connections, past a step that breaks
  // the budget too: latency need not grow with load. A padded batch runs
  // as full at one connection as at 64, so a few connections can break a
  // budget that more keep (H200 run l6: ResNet-50 padded to 32 broke 20 ms
  // at 8 connections, where 64 fill the batches).
  std::vector<std::pair<int, bool>> ladder;  // (connections, within), ascending
  for (const GoodputStep& s : r.steps) ladder.emplace_back(s.concurrency, within(s));
  while (conc < max) {
    conc = std::min(max, conc * 2);
    ORTGPU_ASSIGN_OR_RETURN(bool up_ok, step(conc, false));
    ladder.emplace_back(conc, up_ok);
  }
  std::sort(ladder.begin(), ladder.end());
  // The edge bisected: past the within-budget step of most throughput, the
  // first load that broke the budget.
  good.reset();
  bad.reset();
  double best_items = -1;
  for (const GoodputStep& s : r.steps) {
    if (within(s) && s.items_per_s > best_items) {
      best_items = s.items_per_s;
      good = s.concurrency;
    }
  }
  if (!good) {
    r.note = fmt::format("no load from {} to {} connections met the {:g} ms budget", ladder.front().first,
                         ladder.back().first, o.budget_ms);
    return r;
  }
  for (const auto& [c, ok] : ladder) {
    if (c > *good && !ok) {
      bad = c;
      break;
    }
  }
  while (bad && *bad - *good > 1 && static_cast<double>(*bad) / *good > 1 + o.precision) {
    const int mid = (*good + *bad) / 2;
    ORTGPU_ASSIGN_OR_RETURN(bool mid_ok, step(mid, false));
    (mid_ok ? good : bad) = mid;
  }
  // Confirm the best short steps in full windows, the highest throughput first.
  std::vector<GoodputStep> quick;
  for (const GoodputStep& s : r.steps) {
    if (within(s)) quick.push_back(s);
  }
  std::stable_sort(quick.begin(), quick.end(),
                   [](const GoodputStep& a, const GoodputStep& b) { return a.items_per_s > b.items_per_s; });
  int confirmed = 0;
  for (const GoodputStep& q : quick) {
    if (confirmed >= std::max(1, o.max_confirmations)) break;
    ++confirmed;
    ORTGPU_ASSIGN_OR_RETURN(bool full_ok, step(q.concurrency, true));
    if (full_ok) {
      r.best = r.steps.back();
      break;
    }
  }
  if (!r.best) {
    r.note = fmt::format("the loads that met the {:g} ms budget in short windows broke it in full ones", o.budget_ms);
  } else if (bad) {
    r.note = fmt::format("goodput at {} connections; in short windows the {:g} ms budget held at {} and broke at {}",
                         r.best->concurrency, o.budget_ms, *good, *bad);
  } else {
    r.note = fmt::format("goodput at {} connections; the {:g} ms budget held up to the most connections tried ({})",
                         r.best->concurrency, o.budget_ms, *good);
  }
  return r;
}

}  // namespace ortgpu::tune
