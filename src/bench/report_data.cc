#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "bench/memory_report.h"
#include "bench/report.h"

namespace ortgpu::bench {
namespace {

nlohmann::json PrecisionJson(const PrecisionAccuracy& a) {
  nlohmann::json j = {{"checked", a.checked}};
  if (!a.note.empty()) j["note"] = a.note;
  if (!a.checked) return j;
  j["reference"] = a.reference;
  j["min_cosine"] = a.min_cosine;
  j["max_rel_error"] = a.max_rel_error;
  j["top1_agreement"] = a.top1_agreement ? nlohmann::json(*a.top1_agreement) : nlohmann::json(nullptr);
  j["within_budget"] = a.within_budget;
  j["violations"] = a.violations;
  return j;
}

nlohmann::json ResultJson(const ConfigResult& r, bool with_samples) {
  nlohmann::json j;
  const auto& c = r.config;
  j["variant"] = c.variant.name;
  j["default"] = c.variant.is_default;
  j["io"] = IoModeName(c.variant.io);
  // Whether `ortgpu serve` runs this I/O mode; the others are references,
  // never recommended.
  j["servable"] = ServedByServe(c.variant.io);
  if (!ServedByServe(c.variant.io)) j["not_servable_because"] = NotServedReason(c.variant.io);
  j["optimization"] = OptimizationLevelName(c.variant.optimization);
  j["cuda_options"] = c.variant.cuda_options;
  j["provider"] = ProviderName(c.provider);
  j["precision"] = PrecisionName(c.variant.precision);
  // Against true fp32 (TF32 off): what the precision changed.
  j["precision_accuracy"] = PrecisionJson(r.precision_accuracy);
  j["batch"] = c.batch;
  j["concurrency"] = c.concurrency;
  j["concurrency_mode"] = ConcurrencyModeName(c.concurrency_mode);
  if (!r.error.ok()) {
    j["error"] = {{"code", CodeName(r.error.code())}, {"message", r.error.message()}};
    return j;
  }
  const auto& s = r.stats;
  j["memory"] = r.memory;
  j["session_create_ms"] = r.session_create_ms;
  j["first_run_ms"] = r.first_run_ms;
  j["latency_ms"] = {{"count", s.count}, {"min", s.min_ms}, {"mean", s.mean_ms}, {"p50", s.p50_ms}, {"p90", s.p90_ms},
                     {"p95", s.p95_ms},  {"p99", s.p99_ms}, {"p99.9", s.p999_ms}, {"max", s.max_ms}, {"stddev", s.stddev_ms}};
  j["throughput"] = {{"runs_per_s", s.runs_per_s}, {"items_per_s", s.items_per_s}};
  j["stable"] = s.stable;
  if (!s.stability_note.empty()) j["stability_note"] = s.stability_note;
  j["wall_s"] = r.wall_s;
  j["peak_rss_mb"] = r.peak_rss_mb;
  j["cpu_utilisation_percent"] = r.cpu_utilisation;
  j["gpu_memory_mb"] = r.gpu_memory_mb ? nlohmann::json(*r.gpu_memory_mb) : nlohmann::json(nullptr);
  j["gpu_memory_source"] = r.gpu_memory_source;
  if (r.accuracy.checked) {
    j["accuracy"] = {{"passed", r.accuracy.passed}, {"max_abs_error", r.accuracy.max_abs_error},
                     {"max_rel_error", r.accuracy.max_rel_error}};
    if (!r.accuracy.note.empty()) j["accuracy"]["note"] = r.accuracy.note;
    if (!r.accuracy.row_set_notes.empty()) j["accuracy"]["row_sets"] = r.accuracy.row_set_notes;
  }
  if (with_samples) j["samples_ms"] = r.samples_ms;
  return j;
}

}  // namespace

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

nlohmann::json ReportJson(const BenchReport& report, const JsonOptions& options) {
  nlohmann::json j;
  j["model"] = report.model;
  j["ort_version"] = report.ort_version;
  j["provider"] = ProviderName(report.provider);
  j["dynamic_batch"] = report.dynamic_batch;
  j["ok"] = report.ok();
  j["results"] = nlohmann::json::array();
  for (const auto& r : report.results) j["results"].push_back(ResultJson(r, options.with_samples));
  j["notes"] = report.notes;
  if (!report.memory.empty()) j["memory"] = MemoryJson(report.memory);
  j["precision_budget"] = report.precision_budget.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.precision_budget);
  if (report.recommendation) {
    const auto& rec = *report.recommendation;
    auto pick = [&](const std::optional<Pick>& p) {
      if (!p) return nlohmann::json(nullptr);
      const auto& c = report.results[p->index].config;
      return nlohmann::json{{"index", p->index}, {"variant", c.variant.name}, {"precision", PrecisionName(c.variant.precision)},
                            {"traded", p->traded.empty() ? nlohmann::json(nullptr) : nlohmann::json(p->traded)},
                            {"faster_outside_budget", p->faster_outside_budget ? nlohmann::json(*p->faster_outside_budget) : nlohmann::json(nullptr)},
                            {"batch", c.batch},
                            {"concurrency", c.concurrency}, {"gain_over_default", p->has_baseline ? nlohmann::json(p->gain) : nlohmann::json(nullptr)},
                            {"unstable", p->unstable},
                            {"faster_unstable", p->faster_unstable ? nlohmann::json(*p->faster_unstable) : nlohmann::json(nullptr)},
                            {"faster_not_servable", p->faster_not_served ? nlohmann::json(*p->faster_not_served) : nlohmann::json(nullptr)}};
    };
    j["recommendation"] = {{"latency", pick(rec.latency)}, {"throughput", pick(rec.throughput)}, {"config_pbtxt", rec.config_pbtxt},
                           {"lines", RecommendationLines(report)}};
  }
  return j;
}

std::string RenderCsv(const BenchReport& report) {
  std::string out =
      "variant,provider,io,optimization,batch,concurrency,concurrency_mode,status,count,min_ms,mean_ms,p50_ms,p90_ms,p95_ms,"
      "p99_ms,p999_ms,max_ms,stddev_ms,runs_per_s,items_per_s,session_create_ms,first_run_ms,stable,max_abs_error,"
      "max_rel_error,peak_rss_mb,cpu_percent,gpu_memory_mb,precision,fp32_min_cosine,fp32_max_rel_error,fp32_top1,"
      "within_budget,error\n";
  for (const auto& r : report.results) {
    const auto& c = r.config;
    const auto& s = r.stats;
    const std::string status = !r.error.ok() ? "error" : (r.accuracy.checked && !r.accuracy.passed) ? "wrong" : "ok";
    const PrecisionAccuracy& pa = r.precision_accuracy;
    const std::string within = !pa.checked ? "" : pa.within_budget ? "1" : "0";
    out += fmt::format("{},{},{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{},{:.1f},{:.1f},{},{},{},{},{},{},{}\n",
                       CsvField(c.variant.name), ProviderName(c.provider), IoModeName(c.variant.io),
                       OptimizationLevelName(c.variant.optimization), c.batch, c.concurrency, ConcurrencyModeName(c.concurrency_mode),
                       status, s.count, s.min_ms, s.mean_ms, s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms, s.p999_ms, s.max_ms,
                       s.stddev_ms, s.runs_per_s, s.items_per_s, r.session_create_ms, r.first_run_ms, s.stable ? 1 : 0,
                       r.accuracy.checked ? fmt::format("{:.6g}", r.accuracy.max_abs_error) : "",
                       r.accuracy.checked ? fmt::format("{:.6g}", r.accuracy.max_rel_error) : "", r.peak_rss_mb,
                       r.cpu_utilisation, r.gpu_memory_mb ? fmt::format("{:.1f}", *r.gpu_memory_mb) : "",
                       PrecisionName(c.variant.precision), pa.checked ? fmt::format("{:.8f}", pa.min_cosine) : "",
                       pa.checked ? fmt::format("{:.6g}", pa.max_rel_error) : "",
                       pa.checked && pa.top1_agreement ? fmt::format("{:.6g}", *pa.top1_agreement) : "", within,
                       CsvField(r.error.ok() ? "" : r.error.message()));
  }
  return out;
}

std::string RenderJson(const BenchReport& report, const JsonOptions& options) {
  return ReportJson(report, options).dump(options.indent) + "\n";
}

}  // namespace ortgpu::bench
