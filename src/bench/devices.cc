#include "bench/devices.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench/report.h"

namespace ortgpu::bench {
namespace {

std::string Gpu(const DeviceRow& r) { return fmt::format("GPU {}{}", r.gpu, r.name.empty() ? "" : " (" + r.name + ")"); }

}  // namespace

std::vector<DeviceRun> RunOnDevices(const BenchOptions& options, const std::vector<std::pair<int, std::string>>& gpus,
                                    const std::function<Expected<BenchReport>(const BenchOptions&)>& run) {
  std::vector<DeviceRun> runs;
  for (const auto& [gpu, name] : gpus) {
    BenchOptions on = options;
    on.session.cuda_options["device_id"] = std::to_string(gpu);
    DeviceRun r;
    r.gpu = gpu;
    r.name = name;
    auto report = run(on);
    if (report.ok()) {
      r.report = std::move(report).value();
    } else {
      r.error = report.status();
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

DeviceComparison CompareDevices(const std::vector<DeviceRun>& runs) {
  DeviceComparison c;
  for (const auto& run : runs) {
    DeviceRow row;
    row.gpu = run.gpu;
    row.name = run.name;
    if (!run.error.ok()) {
      row.error = run.error.message();
      c.rows.push_back(std::move(row));
      continue;
    }
    auto measured = [](const ConfigResult& r) { return r.error.ok() && r.stats.count > 0; };
    const auto smallest = SmallestBatchAndConcurrency(run.report, measured);
    for (const auto& r : run.report.results) {
      if (!measured(r)) continue;
      if (r.stats.items_per_s > row.items_per_s) {
        row.items_per_s = r.stats.items_per_s;
        row.best_at = ConfigurationLabel(r.config);
      }
      if (smallest && r.config.batch == smallest->batch && r.config.concurrency == smallest->concurrency &&
          (!row.p50_ms || r.stats.p50_ms < *row.p50_ms)) {
        row.p50_ms = r.stats.p50_ms;
      }
    }
    if (row.items_per_s <= 0) row.error = "no configuration was measured on it";
    c.rows.push_back(std::move(row));
  }
  for (size_t i = 0; i < c.rows.size(); ++i) {
    if (!c.rows[i].error.empty()) continue;
    if (!c.fastest || c.rows[i].items_per_s > c.rows[*c.fastest].items_per_s) c.fastest = i;
    if (!c.slowest || c.rows[i].items_per_s < c.rows[*c.slowest].items_per_s) c.slowest = i;
  }
  if (c.fastest && c.slowest && *c.fastest != *c.slowest) {
    c.ratio = c.rows[*c.slowest].items_per_s / c.rows[*c.fastest].items_per_s;
  } else {
    c.fastest.reset();
    c.slowest.reset();
  }
  return c;
}

std::string RenderDeviceComparison(const DeviceComparison& c) {
  std::string out = "GPUs side by side (the same model and settings on each):\n";
  out += fmt::format("  {:<36} {:>14} {:>10}  {}\n", "GPU", "best items/s", "p50 ms", "best at");
  for (const auto& r : c.rows) {
    if (!r.error.empty()) {
      out += fmt::format("  {:<36} not measured: {}\n", Gpu(r), r.error);
      continue;
    }
    out += fmt::format("  {:<36} {:>14.1f} {:>10}  {}\n", Gpu(r), r.items_per_s,
                       r.p50_ms ? fmt::format("{:.3f}", *r.p50_ms) : std::string("-"), r.best_at);
  }
  if (!c.fastest) {
    out += "  (fewer than two GPUs measured: nothing to compare)\n";
    return out;
  }
  const DeviceRow& fast = c.rows[*c.fastest];
  const DeviceRow& slow = c.rows[*c.slowest];
  out += fmt::format("fastest: {}, {:.1f} items/s; slowest: {}, {:.1f} items/s, {:.2f}x the fastest\n", Gpu(fast),
                     fast.items_per_s, Gpu(slow), slow.items_per_s, c.ratio);
  if (c.ratio < kSlowGpuShare) {
    out += fmt::format(
        "note: GPU {} runs {:.0f}% slower than GPU {} with the same model and settings: check it with "
        "`ortgpu doctor --device {}` (its PCIe link, clock brakes, other processes on it)\n",
        slow.gpu, (1 - c.ratio) * 100, fast.gpu, slow.gpu);
  }
  return out;
}

std::string RenderDevicesJson(const DeviceComparison& c, const std::vector<DeviceRun>& runs) {
  nlohmann::ordered_json j;
  j["devices"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const DeviceRow& r = c.rows[i];
    nlohmann::ordered_json d;
    d["gpu"] = r.gpu;
    d["name"] = r.name;
    d["error"] = r.error;
    d["best_items_per_s"] = r.items_per_s;
    d["best_at"] = r.best_at;
    d["p50_ms"] = r.p50_ms ? nlohmann::ordered_json(*r.p50_ms) : nlohmann::ordered_json(nullptr);
    d["report"] = i < runs.size() && runs[i].error.ok() ? nlohmann::ordered_json(ReportJson(runs[i].report))
                                                        : nlohmann::ordered_json(nullptr);
    j["devices"].push_back(std::move(d));
  }
  j["fastest"] = c.fastest ? nlohmann::ordered_json(c.rows[*c.fastest].gpu) : nlohmann::ordered_json(nullptr);
  j["slowest"] = c.slowest ? nlohmann::ordered_json(c.rows[*c.slowest].gpu) : nlohmann::ordered_json(nullptr);
  j["ratio"] = c.ratio;
  return j.dump(2) + "\n";
}

}  // namespace ortgpu::bench
