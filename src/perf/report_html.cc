#include <fmt/format.h>

#include "perf/report.h"

namespace ortgpu::perf {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string RenderHtml(const PerfReport& report) {
  std::string json = RenderJson(report, {.indent = -1});
  // "</" cannot end the script block early.
  for (size_t p = 0; (p = json.find("</", p)) != std::string::npos; p += 3) json.replace(p, 2, "<\\/");
  std::string out = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>ortgpu perf: " + Escape(report.model) +
                    "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
                    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style></head><body>\n";
  out += "<h1>ortgpu perf: " + Escape(report.model) + " at " + Escape(report.url) + "</h1>\n";
  out += "<table id=\"steps\"><tr><th>load</th><th>infer/s</th><th>items/s</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th>"
         "<th>errors</th><th>queue us</th><th>compute input us</th><th>compute infer us</th><th>compute output us</th>"
         "<th>overhead us</th><th>status</th></tr>\n";
  for (const auto& s : report.steps) {
    auto us = [&](double ServerSplit::*f) { return s.server ? fmt::format("{:.0f}", (*s.server).*f) : std::string("-"); };
    out += fmt::format("<tr><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       Escape(StepLabel(report, s)), s.throughput, s.items_per_s, s.latency.p50_ms, s.latency.p95_ms,
                       s.latency.p99_ms, s.error_count(), us(&ServerSplit::queue_us), us(&ServerSplit::compute_input_us),
                       us(&ServerSplit::compute_infer_us), us(&ServerSplit::compute_output_us), us(&ServerSplit::overhead_us),
                       s.failed ? "FAILED" : s.stable ? "ok" : "unstable");
  }
  out += "</table>\n";
  for (const auto& n : report.notes) out += "<p>note: " + Escape(n) + "</p>\n";
  out += "<script type=\"application/json\" id=\"perf-report\">" + json + "</script>\n</body></html>\n";
  return out;
}

}  // namespace ortgpu::perf
