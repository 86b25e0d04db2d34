// The HTML page of a tune run (tune/report.h): charts and tables from the
// TuneReportView, the JSON document embedded.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/html_report.h"
#include "tune/gpu_memory.h"
#include "tune/report.h"

namespace ortgpu::tune {
namespace {

using report::Chart;
using report::ChartKind;
using report::Point;
using report::Series;

// Lines on one chart past which the legend drowns it: the best are drawn,
// the table has every one.
constexpr size_t kMaxCurves = 10;
// The rejected table's rows in the page (the JSON has all of them).
constexpr size_t kMaxRejectedRows = 400;

std::string F1(double v) { return fmt::format("{:.1f}", v); }
std::string F3(double v) { return fmt::format("{:.3f}", v); }
double MiB(double bytes) { return bytes / (1024.0 * 1024.0); }

Chart NewChart(std::string id, ChartKind kind, std::string title, std::string x_label, std::string y_label) {
  Chart c;
  c.id = std::move(id);
  c.kind = kind;
  c.title = std::move(title);
  c.x_label = std::move(x_label);
  c.y_label = std::move(y_label);
  return c;
}

bool Marked(const ServedRow& r) {
  return r.status == "failed" || r.status == "over memory" || r.status == "no goodput" || !r.anomalies.empty();
}

std::string WhyMarked(const ServedRow& r) {
  std::string why = r.status == "failed" || r.status == "over memory" ? r.status + ": " + r.error : "";
  for (const std::string& a : r.anomalies) why += (why.empty() ? "" : "; ") + a;
  return why;
}

// Goodput per served candidate; the winner red; failed and anomalous ones a
// series of their own whose points carry the reason (failed: a zero bar).
Chart GoodputChart(const TuneReportView& v) {
  Chart c = NewChart("goodput", ChartKind::kBar,
                     "Goodput per served candidate (items/s within the latency budget, mean of repeats)", "candidate",
                     "goodput (items/s)");
  Series ok{"goodput", {}};
  Series marked{"failed or anomalous (reason in the tooltip)", {}};
  for (size_t i = 0; i < v.served.size(); ++i) {
    const ServedRow& r = v.served[i];
    const std::string category =
        r.label + (r.status == "failed" ? " (failed)" : r.status == "over memory" ? " (over memory)" : "");
    if (Marked(r)) {
      marked.points.push_back({static_cast<double>(i), r.goodput.mean, category});
    } else {
      ok.points.push_back({static_cast<double>(i), r.goodput.mean, category});
    }
    if (r.status == "winner") {
      c.highlight = Point{static_cast<double>(i), r.goodput.mean, category};
      c.highlight_label = "winner";
    }
  }
  c.series = {ok, marked};
  return c;
}

// perf's budget-search steps per candidate (the best few), or each
// candidate's goodput against its p99 when no steps were recorded; the budget
// as a line.
Chart LatencyThroughputChart(const TuneReportView& v, double budget_ms) {
  Chart c = NewChart("latency-throughput", ChartKind::kLine, "p99 latency against served throughput", "items/s",
                     "p99 latency (ms)");
  std::vector<const ServedRow*> with_steps;
  for (const ServedRow& r : v.served) {
    if (!r.steps.empty()) with_steps.push_back(&r);
  }
  double lo = 0, hi = 0;
  auto extend = [&](double x) {
    lo = (lo == 0 || x < lo) ? x : lo;
    hi = std::max(hi, x);
  };
  if (!with_steps.empty()) {
    std::stable_sort(with_steps.begin(), with_steps.end(), [](const ServedRow* a, const ServedRow* b) {
      return (a->status == "winner") > (b->status == "winner") || ((a->status == "winner") == (b->status == "winner") &&
                                                                   a->goodput.mean > b->goodput.mean);
    });
    if (with_steps.size() > kMaxCurves) with_steps.resize(kMaxCurves);
    for (const ServedRow* r : with_steps) {
      Series s{r->label + (r->status == "winner" ? " (winner)" : ""), {}};
      for (const LoadStep& st : r->steps) {
        if (st.items_per_s <= 0) continue;
        s.points.push_back({st.items_per_s, st.p99_ms, fmt::format("{:g} connections", st.load)});
        extend(st.items_per_s);
      }
      c.series.push_back(std::move(s));
    }
  } else {
    c.kind = ChartKind::kScatter;
    Series s{"candidates (goodput, p99 at it)", {}};
    for (const ServedRow& r : v.served) {
      if (r.goodput.mean <= 0) continue;
      s.points.push_back({r.goodput.mean, r.p99_ms, r.label});
      extend(r.goodput.mean);
      if (r.status == "winner") {
        c.highlight = Point{r.goodput.mean, r.p99_ms, r.label};
        c.highlight_label = "winner";
      }
    }
    c.series.push_back(std::move(s));
  }
  if (hi > 0) c.series.push_back({fmt::format("budget {:g} ms", budget_ms), {{lo, budget_ms, ""}, {hi, budget_ms, ""}}});
  report::AutoLogAxes(c);
  return c;
}

Chart ScreeningChart(const TuneReportView& v, const std::optional<ServedCandidate>& winner) {
  Chart c = NewChart("engine-screening", ChartKind::kBar,
                     v.screening_batch ? fmt::format("In-process items/s per engine choice at batch {}", *v.screening_batch)
                                       : std::string("In-process items/s per engine choice"),
                     "engine choice", "items/s (one stream)");
  Series s{"items/s", {}};
  for (size_t i = 0; i < v.engines.size(); ++i) {
    for (const InProcessPoint& p : v.engines[i].points) {
      if (!v.screening_batch || p.batch != *v.screening_batch || !p.error.empty()) continue;
      s.points.push_back({static_cast<double>(i), p.measurement.items_per_s, p.engine.Key()});
      if (winner && winner->engine == p.engine) {
        c.highlight = s.points.back();
        c.highlight_label = "the winner's engine choice";
      }
    }
  }
  c.series = {s};
  return c;
}

Chart InProcessChart(const TuneReportView& v) {
  Chart c = NewChart("in-process-latency", ChartKind::kLine,
                     "In-process latency against batch size per engine choice (p50 of one batch)", "batch size",
                     "latency (ms)");
  std::vector<const EngineRow*> engines;
  for (const EngineRow& e : v.engines) {
    if (e.best_items_per_s) engines.push_back(&e);
  }
  std::stable_sort(engines.begin(), engines.end(),
                   [](const EngineRow* a, const EngineRow* b) { return *a->best_items_per_s > *b->best_items_per_s; });
  if (engines.size() > kMaxCurves) engines.resize(kMaxCurves);
  for (const EngineRow* e : engines) {
    Series s{e->engine.Key(), {}};
    for (const InProcessPoint& p : e->points) {
      if (p.error.empty()) {
        s.points.push_back({static_cast<double>(p.batch), p.measurement.latency_ms,
                            fmt::format("{:.1f} items/s", p.measurement.items_per_s)});
      }
    }
    c.series.push_back(std::move(s));
  }
  report::AutoLogAxes(c);
  return c;
}

Chart KnobChart(const TuneReportView& v) {
  Chart c = NewChart("knobs", ChartKind::kBar, "Best served goodput per knob value", "knob = value",
                     "best goodput (items/s)");
  Series s{"best goodput", {}};
  for (size_t i = 0; i < v.knobs.size(); ++i) {
    const KnobRow& k = v.knobs[i];
    if (k.best_goodput) s.points.push_back({static_cast<double>(i), *k.best_goodput, k.knob + " = " + k.value});
  }
  c.series = {s};
  return c;
}

Chart MemoryChart(const TuneReportView& v, const std::string& provider) {
  Chart c = NewChart("memory", ChartKind::kBar,
                     provider == "cpu" ? "Memory each served candidate needs (the CPU provider uses no GPU memory: host memory)"
                                       : "GPU memory each served candidate needs",
                     "candidate", "MiB");
  Series measured{"measured while served (device memory in use)", {}};
  Series estimate{"estimate (not measured)", {}};
  for (size_t i = 0; i < v.served.size(); ++i) {
    const ServedRow& r = v.served[i];
    if (!r.memory_bytes) continue;
    (r.memory_source == "measured" ? measured : estimate).points.push_back({static_cast<double>(i), MiB(*r.memory_bytes), r.label});
  }
  c.series = {measured, estimate};
  return c;
}

void AddSummary(const TuneReport& report, const TuneReportView& v, report::HtmlPage& page) {
  const RunDetails& d = report.details;
  const SearchResult& s = report.search;
  page.AddParagraph(fmt::format(
      "{}{}: latency budget {:g} ms p99, provider {}, {} measurements new and {} from the history ({}){}.", d.model_file,
      d.model_folder.empty() ? "" : " (model folder " + d.model_folder + ")", d.latency_budget_ms, d.provider,
      s.evaluations, s.reused, report.history_path, s.stopped_early ? "; stopped early: a rerun continues" : ""));
  page.AddHeading("Winner");
  if (!v.winner) {
    page.AddParagraph("No winner: no served candidate met the latency budget, and no config was written. The tables "
                      "below say why each candidate was left out or what it reached; raise --latency-budget-ms or "
                      "look at the lightest load's p99.");
    return;
  }
  const WinnerSummary& w = *v.winner;
  std::vector<std::vector<std::string>> rows = {
      {"configuration", w.label},
      {"goodput (items/s, mean)", F1(w.goodput.mean)},
      {"95% interval", fmt::format("{:.1f} .. {:.1f} ({} measurements)", w.goodput.low, w.goodput.high, w.goodput.n)},
      {"p99 at that goodput (ms)", F3(w.p99_ms)},
      {"in-process ceiling of its engine choice (items/s, best batch, one stream)", F1(w.in_process_ceiling)},
      {"served / in-process", w.served_to_in_process > 0 ? fmt::format("{:.2f}", w.served_to_in_process) : "-"},
      {"its own ceiling (instances x batch / latency, capped)", F1(w.candidate_ceiling)},
      {"best in-process of any engine choice (items/s)", F1(v.best_in_process)},
      {"why it won", w.reason},
      {"written", report.config_path}};
  page.AddTable({"winner", ""}, std::move(rows));
  if (!d.config_changes.empty()) {
    page.AddParagraph("What tune changed in " + d.base_config + " (everything else it says is kept):");
    std::vector<std::vector<std::string>> changes;
    for (const std::string& c : d.config_changes) changes.push_back({c});
    page.AddTable({"field: before -> after"}, std::move(changes));
  }
  if (!d.config_pbtxt.empty()) page.AddPre("config-pbtxt", d.config_pbtxt);
}

void AddServedTable(const TuneReportView& v, report::HtmlPage& page) {
  std::vector<std::vector<std::string>> rows;
  for (const ServedRow& r : v.served) {
    std::string goodputs;
    for (double g : r.goodputs) goodputs += (goodputs.empty() ? "" : ", ") + F1(g);
    rows.push_back({r.label, r.status, F1(r.goodput.mean),
                    r.goodput.n >= 2 ? fmt::format("{:.1f} .. {:.1f}", r.goodput.low, r.goodput.high) : "-", goodputs,
                    F3(r.p99_ms), F1(r.bounds.ceiling_items_per_s), F3(r.bounds.floor_ms),
                    r.memory_bytes ? fmt::format("{:.1f}", MiB(*r.memory_bytes)) : "-",
                    r.memory_bytes ? r.memory_source : "", r.load_s ? fmt::format("{:.1f}", *r.load_s) : "-",
                    WhyMarked(r)});
  }
  page.AddTable({"candidate", "status", "goodput", "95% interval", "repeats", "p99 ms", "ceiling", "floor ms",
                 "memory MiB", "memory is", "load s", "failure or anomaly"},
                std::move(rows));
}

void AddInProcessTable(const TuneReportView& v, report::HtmlPage& page) {
  std::vector<int64_t> batches;
  for (const EngineRow& e : v.engines) {
    for (const InProcessPoint& p : e.points) batches.push_back(p.batch);
  }
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  std::vector<std::string> header = {"engine choice", "best items/s"};
  for (int64_t b : batches) header.push_back(fmt::format("batch {} ms", b));
  std::vector<std::vector<std::string>> rows;
  for (const EngineRow& e : v.engines) {
    std::vector<std::string> row = {e.engine.Key(), e.best_items_per_s ? F1(*e.best_items_per_s) : "-"};
    for (int64_t b : batches) {
      auto it = std::find_if(e.points.begin(), e.points.end(), [&](const InProcessPoint& p) { return p.batch == b; });
      row.push_back(it == e.points.end() ? "-" : it->error.empty() ? F3(it->measurement.latency_ms) : "failed: " + it->error);
    }
    rows.push_back(std::move(row));
  }
  page.AddTable(std::move(header), std::move(rows));
}

void AddKnobTable(const TuneReportView& v, report::HtmlPage& page) {
  std::vector<std::vector<std::string>> rows;
  for (const KnobRow& k : v.knobs) {
    rows.push_back({k.knob, k.value, k.best_goodput ? F1(*k.best_goodput) : "-", k.best_candidate,
                    k.best_in_process ? F1(*k.best_in_process) : "-"});
  }
  page.AddTable({"knob", "value", "best served goodput", "by", "best in-process items/s"}, std::move(rows));
}

}  // namespace

std::string RenderTuneHtml(const TuneReport& report) {
  const RunDetails& d = report.details;
  const SearchResult& s = report.search;
  const TuneReportView v = BuildReportView(report);
  report::HtmlPage page("ortgpu tune: " + d.model_file);
  AddSummary(report, v, page);

  page.AddHeading("Served candidates");
  page.AddChart(GoodputChart(v));
  page.AddChart(LatencyThroughputChart(v, d.latency_budget_ms));
  page.AddChart(MemoryChart(v, d.provider));
  AddServedTable(v, page);
  page.AddParagraph(
      "Memory: \"measured\" is the GPU memory in use while the candidate was served (serve's "
      "nv_gpu_memory_used_bytes, the whole device); \"estimate\" is the " +
      std::string(kMemoryEstimateMeaning) + "." +
      (d.memory_limit_source.empty() ? std::string(" No --max-gpu-memory limit.")
                                     : " Limit: " + d.memory_limit_source + "."));

  page.AddHeading("What each knob gave");
  page.AddChart(ScreeningChart(v, s.winner));
  page.AddChart(InProcessChart(v));
  page.AddChart(KnobChart(v));
  AddKnobTable(v, page);
  page.AddHeading("In-process measurements");
  AddInProcessTable(v, page);

  page.AddHeading(fmt::format("Left out ({})", s.rejected.size()));
  std::vector<std::vector<std::string>> rejected;
  for (size_t i = 0; i < s.rejected.size() && i < kMaxRejectedRows; ++i) {
    rejected.push_back({s.rejected[i].candidate, s.rejected[i].reason});
  }
  if (rejected.empty()) {
    page.AddParagraph("None: no candidate was ruled out or pruned.");
  } else {
    page.AddTable({"candidate", "why"}, std::move(rejected));
  }
  if (s.rejected.size() > kMaxRejectedRows) {
    page.AddParagraph(fmt::format("{} more in the JSON (ortgpu tune --json, or the tune-report element of this page).",
                                  s.rejected.size() - kMaxRejectedRows));
  }
  for (const std::string& n : s.notes) page.AddParagraph("Note: " + n);
  for (const std::string& w : report.warnings) page.AddParagraph("Warning: " + w);
  page.AddData("tune-report", TuneReportJson(report));
  return page.Render();
}

}  // namespace ortgpu::tune
