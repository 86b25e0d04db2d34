#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "bench/report.h"
#include "perf/report.h"

namespace ortgpu::perf {
namespace {

using nlohmann::json;

json SplitJson(const std::optional<ServerSplit>& s) {
  if (!s) return nullptr;
  return {{"requests", s->requests},          {"request_us", s->request_us},
          {"queue_us", s->queue_us},          {"compute_input_us", s->compute_input_us},
          {"compute_infer_us", s->compute_infer_us}, {"compute_output_us", s->compute_output_us},
          {"overhead_us", s->overhead_us},    {"average_batch", s->average_batch}};
}

json GpuJson(const GpuSample& g) {
  json devices = json::array();
  for (const auto& d : g.devices) {
    devices.push_back({{"uuid", d.uuid}, {"utilization", d.utilization}, {"memory_used_bytes", d.memory_used_bytes}});
  }
  return {{"gpus", g.gpus}, {"utilization", g.utilization}, {"memory_used_bytes", g.memory_used_bytes},
          {"devices", devices}, {"host_cpu_utilization", g.host_cpu ? json(*g.host_cpu) : json(nullptr)}};
}

json StepJson(const StepResult& s) {
  const auto& l = s.latency;
  json j = {{"load", s.load},
            {"stable", s.stable},
            {"failed", s.failed},
            {"requests", s.requests},
            {"throughput", {{"infer_per_s", s.throughput}, {"items_per_s", s.items_per_s}}},
            {"latency_ms",
             {{"count", l.count}, {"min", l.min_ms}, {"mean", l.mean_ms}, {"p50", l.p50_ms}, {"p90", l.p90_ms},
              {"p95", l.p95_ms}, {"p99", l.p99_ms}, {"max", l.max_ms}, {"stddev", l.stddev_ms}}},
            {"errors", s.errors},
            {"error_count", s.error_count()},
            {"delayed", s.delayed},
            {"server", SplitJson(s.server)},
            {"outside_server_us", s.outside_server_us ? json(*s.outside_server_us) : json(nullptr)},
            {"gpu", s.gpu ? GpuJson(*s.gpu) : json(nullptr)}};
  json windows = json::array();
  for (const auto& w : s.windows) windows.push_back({{"infer_per_s", w.throughput}, {"latency_ms", w.latency_ms}, {"errors", w.errors}});
  j["windows"] = windows;
  if (!s.note.empty()) j["note"] = s.note;
  if (s.goodput) j["goodput_per_s"] = *s.goodput;
  return j;
}

std::string Opt(const std::optional<ServerSplit>& s, double ServerSplit::*f) {
  return s ? fmt::format("{:.3f}", (*s).*f) : "";
}

}  // namespace

std::string RenderJson(const PerfReport& r, const JsonOptions& options) {
  json j;
  j["url"] = r.url;
  j["model"] = r.model;
  j["version"] = r.version;
  j["mode"] = LoadModeName(r.mode);
  if (r.mode == LoadMode::kRequestRate) j["distribution"] = r.distribution;
  j["tensors"] = r.format == TensorFormat::kBinary ? "binary" : "json";
  j["rows_per_request"] = r.rows;
  j["max_batch_size"] = r.max_batch_size;
  j["measurement"] = {{"interval_ms", r.measure.window_ms}, {"stability_percentage", r.measure.stability * 100},
                      {"max_trials", r.measure.max_trials}, {"percentile", r.measure.percentile},
                      {"request_count", r.request_count}};
  j["server_statistics"] = r.server_statistics;
  j["ok"] = r.ok();
  j["steps"] = json::array();
  for (const auto& s : r.steps) j["steps"].push_back(StepJson(s));
  if (r.budget) {
    const auto& b = *r.budget;
    j["latency_budget"] = {{"budget_ms", b.budget_ms}, {"percentile", b.percentile},
                           {"best_step", b.best ? json(*b.best) : json(nullptr)},
                           {"best_load", b.best ? json(r.steps[*b.best].load) : json(nullptr)},
                           {"best_latency_ms", b.best ? json(b.best_latency_ms) : json(nullptr)},
                           {"goodput_infer_per_s", b.best ? json(r.steps[*b.best].throughput) : json(nullptr)},
                           {"note", b.note}};
  }
  if (r.comparison) {
    const auto& c = *r.comparison;
    json rows = json::array();
    for (const auto& row : c.rows) {
      rows.push_back({{"batch", row.batch}, {"items_per_s", row.in_process_items_per_s}, {"p50_ms", row.in_process_p50_ms},
                      {"error", row.error}});
    }
    j["in_process"] = {{"model", c.model_path}, {"provider", c.provider}, {"rows", rows},
                       {"served_items_per_s", c.served_items_per_s},
                       {"best_in_process_items_per_s", c.best_in_process_items_per_s}, {"ratio", c.ratio},
                       {"compared", {{"config_source", c.config_source}, {"io", c.io}, {"cuda_options", c.cuda_options},
                                     {"shapes", c.shapes}, {"batch_source", c.batch_source}, {"command", c.command},
                                     {"notes", c.notes}}}};
  }
  j["notes"] = r.notes;
  return j.dump(options.indent) + "\n";
}

std::string RenderCsv(const PerfReport& r) {
  std::string out =
      "mode,load,stable,failed,requests,infer_per_s,items_per_s,min_ms,mean_ms,p50_ms,p90_ms,p95_ms,p99_ms,max_ms,errors,delayed,"
      "server_request_us,queue_us,compute_input_us,compute_infer_us,compute_output_us,overhead_us,average_batch,"
      "outside_server_us,gpu_utilization,gpu_memory_used_bytes,host_cpu_utilization,note\n";
  for (const auto& s : r.steps) {
    const auto& l = s.latency;
    out += fmt::format("{},{:g},{},{},{},{:.3f},{:.3f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                       LoadModeName(r.mode), s.load, s.stable ? 1 : 0, s.failed ? 1 : 0, s.requests, s.throughput,
                       s.items_per_s, l.min_ms, l.mean_ms, l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.max_ms, s.error_count(),
                       s.delayed, Opt(s.server, &ServerSplit::request_us), Opt(s.server, &ServerSplit::queue_us),
                       Opt(s.server, &ServerSplit::compute_input_us), Opt(s.server, &ServerSplit::compute_infer_us),
                       Opt(s.server, &ServerSplit::compute_output_us), Opt(s.server, &ServerSplit::overhead_us),
                       Opt(s.server, &ServerSplit::average_batch),
                       s.outside_server_us ? fmt::format("{:.3f}", *s.outside_server_us) : "",
                       s.gpu && s.gpu->gpus > 0 ? fmt::format("{:.4f}", s.gpu->utilization) : "",
                       s.gpu && s.gpu->gpus > 0 ? fmt::format("{:.0f}", s.gpu->memory_used_bytes) : "",
                       s.gpu && s.gpu->host_cpu ? fmt::format("{:.4f}", *s.gpu->host_cpu) : "", bench::CsvField(s.note));
  }
  return out;
}

}  // namespace ortgpu::perf
