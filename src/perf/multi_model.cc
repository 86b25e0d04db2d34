#include "perf/multi_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ortgpu::perf {

Expected<ModelShare> ParseModelShare(const std::string& text) {
  ModelShare m;
  const size_t colon = text.rfind(':');
  m.model = text.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string weight = text.substr(colon + 1);
    char* end = nullptr;
    m.share = std::strtod(weight.c_str(), &end);
    if (weight.empty() || *end != '\0' || !(m.share > 0) || !std::isfinite(m.share)) {
      return InvalidArgument("--model '" + text + "': the share after ':' must be a positive number, e.g. --model " +
                             (m.model.empty() ? std::string("resnet50") : m.model) + ":0.5");
    }
  }
  if (m.model.empty()) return InvalidArgument("--model '" + text + "' names no model; give NAME or NAME:SHARE");
  return m;
}

Expected<std::vector<ModelShare>> SplitShares(std::vector<ModelShare> models) {
  if (models.empty()) return InvalidArgument("--model is required: the name of the served model");
  double total = 0;
  std::set<std::string> seen;
  for (const auto& m : models) {
    if (!seen.insert(m.model).second) {
      return InvalidArgument("--model " + m.model + " is given twice; give each model once, with its share");
    }
    total += m.share;
  }
  for (auto& m : models) m.share /= total;
  return models;
}

std::vector<PerfOptions> ModelRunOptions(const PerfOptions& base, const std::vector<ModelShare>& models) {
  std::vector<PerfOptions> out;
  for (const auto& m : models) {
    PerfOptions o = base;
    o.model = m.model;
    o.concurrency.clear();
    for (int c : base.concurrency) o.concurrency.push_back(std::max(1, static_cast<int>(std::lround(c * m.share))));
    o.rates.clear();
    for (double r : base.rates) o.rates.push_back(r * m.share);
    o.rate_connections = std::max(1, static_cast<int>(std::lround(base.rate_connections * m.share)));
    o.request_count = base.request_count > 0 ? std::max<int64_t>(1, std::llround(base.request_count * m.share)) : 0;
    // Lock-step windows, and the budget as every step's goodput threshold.
    o.measure.max_trials = o.measure.stable_windows;
    if (base.latency_budget_ms) o.goodput_budget_ms = base.latency_budget_ms;
    o.latency_budget_ms.reset();
    o.inputs_of_this_model_only = true;
    out.push_back(std::move(o));
  }
  return out;
}

bool MultiPerfReport::ok() const {
  for (const auto& m : models) {
    if (!m.error.empty() || !m.report.ok()) return false;
  }
  return !models.empty();
}

Expected<MultiPerfReport> RunMultiPerf(const PerfOptions& base, const std::vector<ModelShare>& models,
                                       const PerfHooks& hooks) {
  ORTGPU_ASSIGN_OR_RETURN(std::vector<ModelShare> shares, SplitShares(models));
  if (!base.compare_model.empty()) {
    return InvalidArgument("--compare-in-process runs one model's file: give it with a single --model");
  }
  if (base.shared_memory.mode != SharedMemoryMode::kNone) {
    return InvalidArgument("--shared-memory registers one model's regions: give it with a single --model");
  }
  MultiPerfReport report;
  report.mode = base.mode;
  report.budget_ms = base.latency_budget_ms;
  report.budget_percentile = base.budget_percentile;
  const std::vector<PerfOptions> runs = ModelRunOptions(base, shares);
  report.models.resize(runs.size());
  std::mutex progress_mu;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < runs.size(); ++i) {
    report.models[i].share = shares[i];
    threads.emplace_back([&, i] {
      PerfHooks h;
      if (hooks.progress) {
        h.progress = [&, i](const std::string& line) {
          std::lock_guard lock(progress_mu);
          hooks.progress(runs[i].model + ": " + line);
        };
      }
      auto r = RunPerf(runs[i], h);
      if (r.ok()) {
        report.models[i].report = std::move(r).value();
      } else {
        report.models[i].error = r.status().message();
      }
    });
  }
  for (auto& t : threads) t.join();
  report.saturation = DescribeSaturation(report.models);
  report.notes.push_back(
      base.request_count > 0
          ? fmt::format("{} models loaded together, each sending its share of the {} requests of every step",
                        runs.size(), base.request_count)
          : fmt::format("{} models loaded together, each with its share of every step; each step is {} windows of {} "
                        "ms for every model, so their steps overlap (a step whose windows disagree is marked "
                        "unstable, not measured longer)",
                        runs.size(), base.measure.stable_windows, base.measure.window_ms));
  return report;
}

namespace {

std::string Share(double s) { return fmt::format("{:.0f}%", s * 100); }

// Seconds of execution per second of a model's step: its executions per
// second times the compute time of one (every request of a batch records the
// batch's times). nullopt without the statistics extension.
std::optional<double> ExecutionSecondsPerSecond(const PerfReport& report, const StepResult& s) {
  if (!s.server || s.server->average_batch <= 0) return std::nullopt;
  const double executions_per_s = s.throughput * static_cast<double>(report.rows) / s.server->average_batch;
  const double exec_us = s.server->compute_input_us + s.server->compute_infer_us + s.server->compute_output_us;
  return executions_per_s * exec_us / 1e6;
}

}  // namespace

std::vector<std::string> DescribeSaturation(const std::vector<ModelPerf>& models) {
  size_t steps = 0;
  for (const auto& m : models) steps = std::max(steps, m.report.steps.size());
  std::vector<std::string> out;
  bool told_no_gauges = false;
  for (size_t k = 0; k < steps; ++k) {
    double gpu = 0, cpu = 0;
    int gpu_n = 0, cpu_n = 0;
    std::vector<std::pair<std::string, double>> busy;  // model, execution s/s
    double busy_total = 0;
    for (const auto& m : models) {
      if (k >= m.report.steps.size()) continue;
      const StepResult& s = m.report.steps[k];
      if (s.gpu && s.gpu->gpus > 0) gpu += s.gpu->utilization, ++gpu_n;
      if (s.gpu && s.gpu->host_cpu) cpu += *s.gpu->host_cpu, ++cpu_n;
      if (auto b = ExecutionSecondsPerSecond(m.report, s)) {
        busy.emplace_back(m.share.model, *b);
        busy_total += *b;
      }
    }
    if (gpu_n == 0 && cpu_n == 0) {
      if (!told_no_gauges) {
        out.push_back(fmt::format("step {}: no GPU or host CPU figures from the server's metrics (nv_gpu_utilization, "
                                  "nv_cpu_utilization): what limited the load is not known; give --metrics-url",
                                  k + 1));
        told_no_gauges = true;
      }
      continue;
    }
    std::optional<double> g, c;
    if (gpu_n > 0) g = gpu / gpu_n;
    if (cpu_n > 0) c = cpu / cpu_n;
    const bool gpu_full = g && *g >= kSaturated;
    const bool cpu_full = c && *c >= kSaturated;
    std::sort(busy.begin(), busy.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string takes;
    if (busy_total > 0) {
      for (const auto& [model, b] : busy) {
        takes += fmt::format("{}{} {}", takes.empty() ? "" : ", ", model, Share(b / busy_total));
      }
    }
    const std::string gpu_text = g ? fmt::format("GPU {:.0f}% busy", *g * 100) : "GPU not reported";
    const std::string cpu_text = c ? fmt::format("host CPU {:.0f}% of every core", *c * 100) : "host CPU not reported";
    std::string line;
    if (gpu_full && cpu_full) {
      line = fmt::format("step {}: the GPU and the host's CPU are both saturated ({}; {})", k + 1, gpu_text, cpu_text);
    } else if (gpu_full) {
      line = fmt::format("step {}: the GPU is saturated ({}; {})", k + 1, gpu_text, cpu_text);
      if (!takes.empty()) line += ": execution time " + takes + "; the first is the one to move or shrink";
    } else if (cpu_full) {
      line = fmt::format("step {}: the host's CPU is saturated, not the GPU ({}; {}): the server's threads and a "
                         "client on the same host share the cores, and the models whose requests cost the most CPU "
                         "for their compute (the small ones) lose most",
                         k + 1, cpu_text, gpu_text);
    } else {
      line = fmt::format("step {}: neither the GPU nor the host's CPU is saturated ({}; {}): the load asked for, or "
                         "the instances and batching, set these figures",
                         k + 1, gpu_text, cpu_text);
    }
    if (!takes.empty() && !gpu_full) line += "; execution time " + takes;
    out.push_back(std::move(line));
  }
  return out;
}

std::string RenderMultiTable(const MultiPerfReport& r) {
  std::string out;
  if (r.budget_ms) out += fmt::format("goodput: successful requests per second within {:g} ms\n", *r.budget_ms);
  size_t name_w = 5;
  size_t steps = 0;
  for (const auto& m : r.models) {
    name_w = std::max(name_w, m.share.model.size());
    steps = std::max(steps, m.report.steps.size());
  }
  const char* load = r.mode == LoadMode::kRequestRate ? "req/s" : "conc";
  out += fmt::format("{:>4} {:<{}} {:>6} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>10} {:>7}  {}\n", "step", "model",
                     name_w, "share", load, "infer/s", "items/s", "p50 ms", "p95 ms", "p99 ms", "goodput/s", "errors",
                     "status");
  for (size_t k = 0; k < steps; ++k) {
    for (const auto& m : r.models) {
      if (k >= m.report.steps.size()) continue;
      const StepResult& s = m.report.steps[k];
      out += fmt::format("{:>4} {:<{}} {:>6} {:>8g} {:>10.1f} {:>10.1f} {:>8.3f} {:>8.3f} {:>8.3f} {:>10} {:>7}  {}\n", k + 1,
                         m.share.model, name_w, Share(m.share.share), s.load, s.throughput, s.items_per_s,
                         s.latency.p50_ms, s.latency.p95_ms, s.latency.p99_ms,
                         s.goodput ? fmt::format("{:.1f}", *s.goodput) : "-", s.error_count(),
                         s.failed ? "FAILED" : s.stable ? "ok" : "unstable");
    }
  }
  for (const auto& m : r.models) {
    if (!m.error.empty()) out += fmt::format("{}: did not run: {}\n", m.share.model, m.error);
    for (const auto& n : m.report.notes) out += fmt::format("note: {}: {}\n", m.share.model, n);
    for (const auto& s : m.report.steps) {
      if (s.failed || s.error_count() > 0) {
        out += fmt::format("{}: {}: {}{}\n", m.share.model, StepLabel(m.report, s),
                           s.errors.empty() ? "" : "requests failed: " + DescribeErrors(s.errors),
                           s.note.empty() ? "" : (s.errors.empty() ? "" : "; ") + s.note);
      }
    }
  }
  for (const auto& line : r.saturation) out += "saturation: " + line + "\n";
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  return out;
}

std::string RenderMultiJson(const MultiPerfReport& r, int indent) {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : r.models) {
    nlohmann::json one = {{"model", m.share.model}, {"share", m.share.share}};
    one["error"] = m.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.error);
    one["report"] = m.error.empty() ? nlohmann::json::parse(RenderJson(m.report)) : nlohmann::json(nullptr);
    models.push_back(std::move(one));
  }
  nlohmann::json j = {{"mode", LoadModeName(r.mode)},
                      {"budget_ms", r.budget_ms ? nlohmann::json(*r.budget_ms) : nlohmann::json(nullptr)},
                      {"ok", r.ok()},
                      {"models", models},
                      {"saturation", r.saturation},
                      {"notes", r.notes}};
  return j.dump(indent) + "\n";
}

}  // namespace ortgpu::perf
