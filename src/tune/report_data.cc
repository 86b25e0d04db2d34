// The report's view of a tune run and its JSON document (tune/report.h).
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpu/gpu_info.h"
#include "tune/gpu_memory.h"
#include "tune/report.h"

namespace ortgpu::tune {
namespace {

using nlohmann::json;

// A served figure above its in-process ceiling by more than this is suspect:
// the server cannot beat the engine it runs on (the ceiling or the
// measurement is off).
constexpr double kAboveCeiling = 1.10;
// Repeats whose confidence interval is wider than this share of the mean
// are noisy: the decision between them is weak.
constexpr double kNoisyHalfWidth = 0.10;
constexpr double kDecisionConfidence = 0.95;

json IntervalJson(const Interval& i) { return {{"mean", i.mean}, {"low", i.low}, {"high", i.high}, {"n", i.n}}; }

json CandidateJson(const ServedCandidate& c) {
  return {{"key", c.Key()},
          {"precision", PrecisionName(c.engine.precision)},
          {"prefer_nhwc", c.engine.prefer_nhwc},
          {"cuda_graphs", c.engine.cuda_graphs},
          {"conv_search", ConvAlgoSearchName(c.engine.conv_search)},
          {"instances", c.instances},
          {"batch", c.batch},
          {"pad_to_preferred", c.pad_to_preferred},
          {"max_queue_delay_us", c.max_queue_delay_us},
          {"workers_per_instance", c.workers_per_instance}};
}

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string StatusOf(const ServedOutcome& o, const SearchResult& s) {
  if (o.over_memory) return "over memory";
  if (!o.error.empty()) return "failed";
  if (s.winner && *s.winner == o.candidate) return "winner";
  if (o.goodputs.empty() || o.goodputs.front() <= 0) return "no goodput";
  for (const Contender& c : s.leaders) {
    if (c.candidate == o.candidate) return "leader";
  }
  return "served";
}

ServedRow MakeRow(const ServedOutcome& o, const std::vector<Measurement>& measured, const TuneReport& report) {
  const SearchResult& s = report.search;
  ServedRow row;
  row.candidate = o.candidate;
  row.label = CandidateLabel(o.candidate);
  row.bounds = o.bounds;
  row.goodputs = o.goodputs;
  row.goodput = MeanInterval(o.goodputs, kDecisionConfidence);
  row.p99_ms = o.last_p99_ms;
  row.error = o.error;
  row.status = StatusOf(o, s);
  if (row.status == "no goodput") {
    row.anomalies.push_back(fmt::format("no load met the {:g} ms budget (p99 {:.2f} ms at the lightest load)",
                                        report.details.latency_budget_ms, o.last_p99_ms));
  }
  // The search's own judgment (IsAnomalous): far from its ceiling, measured
  // again, and still so.
  if (o.anomalous && !o.anomaly.empty()) row.anomalies.push_back("anomalous: " + o.anomaly);
  if (!o.discarded.empty()) {
    row.anomalies.push_back(fmt::format("{} goodput(s) set aside: anomalous, and the measurement again was not",
                                        o.discarded.size()));
  }
  if (row.goodput.mean > 0 && o.bounds.ceiling_items_per_s > 0 &&
      row.goodput.mean > kAboveCeiling * o.bounds.ceiling_items_per_s) {
    row.anomalies.push_back(fmt::format("above its in-process ceiling ({:.1f} items/s) by {:.0f}%: the ceiling or "
                                        "the measurement is off",
                                        o.bounds.ceiling_items_per_s,
                                        (row.goodput.mean / o.bounds.ceiling_items_per_s - 1) * 100));
  }
  if (row.goodput.n >= 2 && row.goodput.mean > 0 &&
      (row.goodput.high - row.goodput.low) / 2 > kNoisyHalfWidth * row.goodput.mean) {
    row.anomalies.push_back(fmt::format("noisy: repeats {:.1f}..{:.1f} items/s",
                                        *std::min_element(o.goodputs.begin(), o.goodputs.end()),
                                        *std::max_element(o.goodputs.begin(), o.goodputs.end())));
  }
  // What the history holds; without it (a history written elsewhere), the
  // search's own first measurement.
  const std::vector<Measurement> first_only = {o.first};
  for (const Measurement& m : measured.empty() ? first_only : measured) {
    if (m.gpu_memory_bytes) row.memory_bytes = std::max(row.memory_bytes.value_or(0), *m.gpu_memory_bytes);
    if (m.load_s && !row.load_s) row.load_s = m.load_s;
    if (row.steps.empty()) row.steps = m.steps;
  }
  const std::optional<int64_t>& limit = report.details.traits.gpu_memory_limit_bytes;
  if (row.memory_bytes) {
    row.memory_source = "measured";
    // (A candidate the search measured over the limit says so as its status.)
    if (limit && *row.memory_bytes > static_cast<double>(*limit) && !o.over_memory) {
      row.anomalies.push_back(fmt::format("{} of GPU memory in use while served, over the --max-gpu-memory limit of {} "
                                          "(the device's memory in use, other processes included)",
                                          gpu::FormatBytes(static_cast<uint64_t>(*row.memory_bytes)),
                                          gpu::FormatBytes(static_cast<uint64_t>(*limit))));
    }
  } else if (report.details.traits.weight_bytes > 0) {
    row.memory_bytes = static_cast<double>(EstimatedMemoryBytes(o.candidate, report.details.traits));
    row.memory_source = "estimate";
  }
  return row;
}

std::vector<EngineRow> Engines(const RunDetails& d) {
  std::vector<EngineRow> out;
  for (const InProcessPoint& p : d.in_process) {
    auto it = std::find_if(out.begin(), out.end(), [&](const EngineRow& r) { return r.engine == p.engine; });
    if (it == out.end()) {
      out.push_back({p.engine, {}, std::nullopt});
      it = out.end() - 1;
    }
    it->points.push_back(p);
    if (p.error.empty()) it->best_items_per_s = std::max(it->best_items_per_s.value_or(0), p.measurement.items_per_s);
  }
  return out;
}

std::optional<int64_t> ScreeningBatch(const RunDetails& d) {
  std::map<int64_t, int> engines_at;
  for (const InProcessPoint& p : d.in_process) {
    if (p.error.empty()) ++engines_at[p.batch];
  }
  std::optional<int64_t> best;
  for (const auto& [batch, n] : engines_at) {
    if (!best || n >= engines_at[*best]) best = batch;
  }
  return best;
}

// The knobs and how each candidate or engine choice spells its value.
struct Knob {
  const char* name;
  std::string (*served)(const ServedCandidate&);  // null: an engine-only knob
  std::string (*engine)(const EngineChoice&);     // null: a served-only knob
};

std::string OnOff(bool b) { return b ? "on" : "off"; }

const Knob kKnobs[] = {
    {"precision", [](const ServedCandidate& c) { return std::string(PrecisionName(c.engine.precision)); },
     [](const EngineChoice& e) { return std::string(PrecisionName(e.precision)); }},
    {"prefer_nhwc", [](const ServedCandidate& c) { return OnOff(c.engine.prefer_nhwc); },
     [](const EngineChoice& e) { return OnOff(e.prefer_nhwc); }},
    {"cuda graphs", [](const ServedCandidate& c) { return OnOff(c.engine.cuda_graphs); },
     [](const EngineChoice& e) { return OnOff(e.cuda_graphs); }},
    {"cudnn conv search", [](const ServedCandidate& c) { return std::string(ConvAlgoSearchName(c.engine.conv_search)); },
     [](const EngineChoice& e) { return std::string(ConvAlgoSearchName(e.conv_search)); }},
    {"instances", [](const ServedCandidate& c) { return std::to_string(c.instances); }, nullptr},
    {"batch", [](const ServedCandidate& c) { return std::to_string(c.batch); }, nullptr},
    {"padding", [](const ServedCandidate& c) { return OnOff(c.pad_to_preferred); }, nullptr},
    {"queue delay (us)", [](const ServedCandidate& c) { return std::to_string(c.max_queue_delay_us); }, nullptr},
    {"workers", [](const ServedCandidate& c) { return std::to_string(c.workers_per_instance); }, nullptr},
};

bool IsNumber(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<KnobRow> Knobs(const std::vector<ServedRow>& served, const RunDetails& d) {
  std::vector<KnobRow> out;
  for (const Knob& k : kKnobs) {
    std::vector<KnobRow> rows;  // this knob's values, in the order met
    auto row_for = [&](const std::string& value) -> KnobRow& {
      for (KnobRow& r : rows) {
        if (r.value == value) return r;
      }
      rows.push_back({k.name, value, std::nullopt, "", std::nullopt});
      return rows.back();
    };
    for (const ServedRow& s : served) {
      if (s.goodputs.empty() || !s.error.empty()) continue;
      KnobRow& r = row_for(k.served(s.candidate));
      if (!r.best_goodput || s.goodput.mean > *r.best_goodput) {
        r.best_goodput = s.goodput.mean;
        r.best_candidate = s.label;
      }
    }
    const bool batch = std::string_view(k.name) == "batch";
    for (const InProcessPoint& p : d.in_process) {
      if (!p.error.empty() || (!k.engine && !batch)) continue;
      KnobRow& r = row_for(batch ? std::to_string(p.batch) : k.engine(p.engine));
      r.best_in_process = std::max(r.best_in_process.value_or(0), p.measurement.items_per_s);
    }
    // Numbers ascending (batch, instances, delays); names as met.
    std::stable_sort(rows.begin(), rows.end(), [](const KnobRow& a, const KnobRow& b) {
      return IsNumber(a.value) && IsNumber(b.value) && std::stoll(a.value) < std::stoll(b.value);
    });
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

}  // namespace

std::string CandidateLabel(const ServedCandidate& c) {
  std::string out = fmt::format("{} inst, batch {}", c.instances, c.batch);
  if (c.pad_to_preferred) out += ", pad";
  if (c.max_queue_delay_us > 0) out += fmt::format(", delay {}us", c.max_queue_delay_us);
  if (c.workers_per_instance != ServedCandidate::kDefaultWorkers) out += fmt::format(", {} workers", c.workers_per_instance);
  const EngineChoice defaults;
  if (c.engine.precision != defaults.precision) out += fmt::format(", {}", PrecisionName(c.engine.precision));
  if (c.engine.prefer_nhwc) out += ", nhwc";
  if (c.engine.cuda_graphs) out += ", graphs";
  if (c.engine.conv_search != defaults.conv_search) out += ", " + std::string(ConvAlgoSearchName(c.engine.conv_search));
  return out;
}

TuneReportView BuildReportView(const TuneReport& report) {
  const SearchResult& s = report.search;
  const RunDetails& d = report.details;
  TuneReportView v;
  for (size_t i = 0; i < s.served.size(); ++i) {
    static const std::vector<Measurement> kNone;
    v.served.push_back(MakeRow(s.served[i], i < d.served.size() ? d.served[i] : kNone, report));
  }
  v.engines = Engines(d);
  for (const EngineRow& e : v.engines) v.best_in_process = std::max(v.best_in_process, e.best_items_per_s.value_or(0));
  v.screening_batch = ScreeningBatch(d);
  v.knobs = Knobs(v.served, d);
  if (s.winner) {
    WinnerSummary w;
    w.candidate = *s.winner;
    w.label = CandidateLabel(*s.winner);
    w.reason = s.decision.reason;
    for (const ServedRow& r : v.served) {
      if (r.candidate != *s.winner) continue;
      w.goodput = r.goodput;
      w.p99_ms = r.p99_ms;
      w.candidate_ceiling = r.bounds.ceiling_items_per_s;
    }
    w.in_process_ceiling = s.curves.BestItemsPerSecond(s.winner->engine).value_or(0);
    w.served_to_in_process = w.in_process_ceiling > 0 ? w.goodput.mean / w.in_process_ceiling : 0;
    v.winner = w;
  }
  return v;
}

json TuneReportJson(const TuneReport& report) {
  const SearchResult& s = report.search;
  const RunDetails& d = report.details;
  const TuneReportView v = BuildReportView(report);
  json j;
  j["model"] = d.model_file;
  j["model_folder"] = d.model_folder;
  j["base_config"] = d.base_config;
  j["output"] = d.output_dir;
  j["provider"] = d.provider;
  j["latency_budget_ms"] = d.latency_budget_ms;
  j["config_path"] = report.config_path;
  j["config_pbtxt"] = d.config_pbtxt;
  j["config_changes"] = d.config_changes;
  j["history_path"] = report.history_path;
  j["report_path"] = d.report_path;
  j["measurements"] = {{"new", s.evaluations}, {"from_history", s.reused}, {"stopped_early", s.stopped_early}};
  j["traits"] = {{"max_batch_size", d.traits.max_batch_size},
                 {"variable_non_batch_dim", d.traits.variable_non_batch_dim},
                 {"weight_bytes", d.traits.weight_bytes},
                 {"activation_bytes_per_row", d.traits.activation_bytes_per_row},
                 {"gpu_memory_limit_bytes",
                  d.traits.gpu_memory_limit_bytes ? json(*d.traits.gpu_memory_limit_bytes) : json(nullptr)},
                 {"gpu_memory_limit_source", d.memory_limit_source},
                 {"memory_estimate", kMemoryEstimateMeaning}};
  if (v.winner) {
    const WinnerSummary& w = *v.winner;
    j["winner"] = {{"candidate", CandidateJson(w.candidate)},
                   {"label", w.label},
                   {"goodput", IntervalJson(w.goodput)},
                   {"p99_ms", w.p99_ms},
                   {"in_process_ceiling_items_per_s", w.in_process_ceiling},
                   {"served_to_in_process", w.served_to_in_process},
                   {"candidate_ceiling_items_per_s", w.candidate_ceiling},
                   {"reason", w.reason}};
  } else {
    j["winner"] = nullptr;
  }
  json served = json::array();
  for (const ServedRow& r : v.served) {
    json steps = json::array();
    for (const LoadStep& st : r.steps) steps.push_back({{"load", st.load}, {"items_per_s", st.items_per_s}, {"p99_ms", st.p99_ms}});
    served.push_back({{"candidate", CandidateJson(r.candidate)},
                      {"label", r.label},
                      {"status", r.status},
                      {"error", r.error},
                      {"anomalies", r.anomalies},
                      {"goodputs", r.goodputs},
                      {"goodput", IntervalJson(r.goodput)},
                      {"p99_ms", r.p99_ms},
                      {"ceiling_items_per_s", r.bounds.ceiling_items_per_s},
                      {"floor_ms", r.bounds.floor_ms},
                      {"memory", r.memory_bytes ? json{{"bytes", *r.memory_bytes}, {"source", r.memory_source}} : json(nullptr)},
                      {"load_s", Optional(r.load_s)},
                      {"steps", std::move(steps)}});
  }
  j["served"] = std::move(served);
  json engines = json::array();
  for (const EngineRow& e : v.engines) {
    json points = json::array();
    for (const InProcessPoint& p : e.points) {
      points.push_back({{"batch", p.batch},
                        {"latency_ms", p.error.empty() ? json(p.measurement.latency_ms) : json(nullptr)},
                        {"items_per_s", p.error.empty() ? json(p.measurement.items_per_s) : json(nullptr)},
                        {"error", p.error}});
    }
    engines.push_back({{"engine", CandidateJson({.engine = e.engine})},
                       {"key", e.engine.Key()},
                       {"best_items_per_s", Optional(e.best_items_per_s)},
                       {"points", std::move(points)}});
  }
  j["in_process"] = std::move(engines);
  if (v.screening_batch) {
    json screening = json::array();
    for (const EngineRow& e : v.engines) {
      for (const InProcessPoint& p : e.points) {
        if (p.batch == *v.screening_batch && p.error.empty()) {
          screening.push_back({{"engine", e.engine.Key()}, {"items_per_s", p.measurement.items_per_s}});
        }
      }
    }
    j["engine_screening"] = {{"batch", *v.screening_batch}, {"items_per_s", std::move(screening)}};
  } else {
    j["engine_screening"] = nullptr;
  }
  json knobs = json::array();
  for (const KnobRow& k : v.knobs) {
    knobs.push_back({{"knob", k.knob},
                     {"value", k.value},
                     {"best_goodput", Optional(k.best_goodput)},
                     {"best_candidate", k.best_candidate},
                     {"best_in_process_items_per_s", Optional(k.best_in_process)}});
  }
  j["knobs"] = std::move(knobs);
  json rejected = json::array();
  for (const Rejected& r : s.rejected) rejected.push_back({{"candidate", r.candidate}, {"reason", r.reason}});
  j["rejected"] = std::move(rejected);
  j["notes"] = s.notes;
  j["warnings"] = report.warnings;
  return j;
}

std::string RenderTuneJson(const TuneReport& report) { return TuneReportJson(report).dump(2) + "\n"; }

}  // namespace ortgpu::tune
