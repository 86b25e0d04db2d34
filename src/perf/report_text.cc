#include <fmt/format.h>

#include "perf/report.h"

namespace ortgpu::perf {
namespace {

std::string Us(const std::optional<ServerSplit>& s, double ServerSplit::*field) {
  return s ? fmt::format("{:.0f}", (*s).*field) : "-";
}

}  // namespace

std::string_view LoadModeName(LoadMode m) { return m == LoadMode::kRequestRate ? "request-rate" : "concurrency"; }

int64_t StepResult::error_count() const {
  int64_t n = 0;
  for (const auto& [code, count] : errors) n += count;
  return n;
}

bool PerfReport::ok() const {
  for (const auto& s : steps) {
    if (s.failed || s.error_count() > 0) return false;
  }
  return !steps.empty();
}

std::string StepLabel(const PerfReport& report, const StepResult& step) {
  return report.mode == LoadMode::kRequestRate ? fmt::format("{:g} req/s", step.load) : fmt::format("concurrency {:g}", step.load);
}

std::vector<std::string> ComparisonSettingsLines(const InProcessComparison& c) {
  std::vector<std::string> lines;
  lines.push_back("settings from " + c.config_source);
  if (!c.io.empty()) {
    lines.push_back("I/O: " + c.io +
                    (c.io == "served-graph" ? " (inputs staged in pinned memory and copied into the CUDA graph, replay, "
                                              "outputs copied to the host)"
                                            : " (inputs staged in pinned memory, outputs copied to the host)"));
    std::string options;
    for (const auto& [k, v] : c.cuda_options) options += (options.empty() ? "" : " ") + k + "=" + v;
    lines.push_back("EP options: " + (options.empty() ? std::string("ONNX Runtime's defaults") : options));
  }
  if (!c.rows.empty()) lines.push_back(fmt::format("batch {}: {}", c.rows.front().batch, c.batch_source));
  if (!c.shapes.empty()) {
    std::string shapes;
    for (const auto& [name, shape] : c.shapes) shapes += (shapes.empty() ? "" : ", ") + name + " " + ShapeToString(shape);
    lines.push_back("shapes: " + shapes);
  }
  if (!c.command.empty()) lines.push_back("the same as: " + c.command);
  for (const auto& n : c.notes) lines.push_back("note: " + n);
  return lines;
}

std::string RenderTable(const PerfReport& report) {
  std::string out = fmt::format("model {}{} at {}  {} tensors, {} row(s) per request{}\n", report.model,
                                report.version.empty() ? "" : " version " + report.version, report.url,
                                report.format == TensorFormat::kBinary ? "binary" : "JSON", report.rows,
                                report.max_batch_size > 0 ? fmt::format(", max_batch_size {}", report.max_batch_size) : "");
  if (report.request_count > 0) {
    out += fmt::format("{} requests per step\n", report.request_count);
  } else {
    out += fmt::format("windows of {} ms; a step counts when 3 agree within {:.0f}% on throughput and p{:g} (at most {} windows)\n",
                       report.measure.window_ms, report.measure.stability * 100, report.measure.percentile, report.measure.max_trials);
  }
  const char* load = report.mode == LoadMode::kRequestRate ? "req/s" : "conc";
  out += fmt::format("{:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>7} | {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6} | {:>5} {:>7} {:>5}  {}\n",
                     load, "infer/s", "items/s", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "errors", "server", "queue",
                     "c.in", "c.infer", "c.out", "overhd", "outside", "batch", "GPU%", "GPU MB", "CPU%", "status");
  for (const auto& s : report.steps) {
    const auto& l = s.latency;
    std::string status = s.failed ? "FAILED" : s.stable ? "ok" : "unstable";
    if (s.delayed > 0) status += fmt::format(" ({} delayed)", s.delayed);
    out += fmt::format(
        "{:>8g} {:>10.1f} {:>10.1f} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>7} | {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6} | {:>5} {:>7} {:>5}  {}\n",
        s.load, s.throughput, s.items_per_s, l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, s.error_count(),
        Us(s.server, &ServerSplit::request_us), Us(s.server, &ServerSplit::queue_us), Us(s.server, &ServerSplit::compute_input_us),
        Us(s.server, &ServerSplit::compute_infer_us), Us(s.server, &ServerSplit::compute_output_us),
        Us(s.server, &ServerSplit::overhead_us), s.outside_server_us ? fmt::format("{:.0f}", *s.outside_server_us) : "-",
        s.server ? fmt::format("{:.2f}", s.server->average_batch) : "-",
        s.gpu && s.gpu->gpus > 0 ? fmt::format("{:.0f}", s.gpu->utilization * 100) : "-",
        s.gpu && s.gpu->gpus > 0 ? fmt::format("{:.0f}", s.gpu->memory_used_bytes / (1024.0 * 1024.0)) : "-",
        s.gpu && s.gpu->host_cpu ? fmt::format("{:.0f}", *s.gpu->host_cpu * 100) : "-", status);
  }
  out += "server columns: mean microseconds per request from the statistics extension; outside = client mean minus server mean "
         "(network, client, HTTP); GPU% and CPU%: the server's GPUs and its host's every core (nv_gpu_utilization, nv_cpu_utilization)\n";
  for (const auto& s : report.steps) {
    if (!s.gpu || s.gpu->devices.size() < 2) continue;
    std::string per;
    for (const auto& d : s.gpu->devices) {
      per += fmt::format("{}{} {:.0f}% {:.0f} MB", per.empty() ? "" : "; ", d.uuid.empty() ? "?" : d.uuid,
                         d.utilization * 100, d.memory_used_bytes / (1024.0 * 1024.0));
    }
    out += fmt::format("GPUs at {}: {}\n", StepLabel(report, s), per);
    if (auto imbalance = DescribeGpuImbalance(*s.gpu); !imbalance.empty()) {
      out += fmt::format("note: {}: {}\n", StepLabel(report, s), imbalance);
    }
  }
  for (const auto& s : report.steps) {
    if (!s.errors.empty()) out += fmt::format("errors at {}: {}\n", StepLabel(report, s), DescribeErrors(s.errors));
    if (!s.note.empty()) out += fmt::format("note: {}: {}\n", StepLabel(report, s), s.note);
  }
  if (report.budget) {
    const auto& b = *report.budget;
    if (b.best) {
      const auto& s = report.steps[*b.best];
      out += fmt::format("latency budget {:g} ms (p{:g}): best {}: {:.1f} infer/s, {:.1f} items/s, p{:g} {:.3f} ms ({})\n", b.budget_ms,
                         b.percentile, StepLabel(report, s), s.throughput, s.items_per_s, b.percentile,
                         b.best_latency_ms, b.note);
    } else {
      out += fmt::format("latency budget {:g} ms (p{:g}): no load meets it ({})\n", b.budget_ms, b.percentile, b.note);
    }
  }
  if (report.comparison) {
    const auto& c = *report.comparison;
    out += fmt::format("in process ({}, ortgpu bench {}), as serve runs it:\n", c.provider, c.model_path);
    for (const auto& line : ComparisonSettingsLines(c)) out += "  " + line + "\n";
    for (const auto& r : c.rows) {
      out += r.error.empty() ? fmt::format("  batch {:>4}: {:>10.1f} items/s, p50 {:.3f} ms\n", r.batch, r.in_process_items_per_s,
                                           r.in_process_p50_ms)
                             : fmt::format("  batch {:>4}: failed: {}\n", r.batch, r.error);
    }
    out += c.ratio > 0 ? fmt::format("served {:.1f} items/s vs in-process {:.1f} items/s: ratio {:.2f}\n", c.served_items_per_s,
                                     c.best_in_process_items_per_s, c.ratio)
                       : "served vs in-process: no ratio (one side has no figure)\n";
  }
  for (const auto& n : report.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace ortgpu::perf
