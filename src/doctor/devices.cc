#include "doctor/devices.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "doctor/render.h"

namespace ortgpu::doctor {
namespace {

std::optional<double> Fact(const Report& report, const std::string& id, const std::string& key) {
  const Finding* f = report.Find(id);
  if (f == nullptr) return std::nullopt;
  auto it = f->facts.find(key);
  if (it == f->facts.end() || it->second.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str()) return std::nullopt;
  return v;
}

std::string Gpu(const DeviceRow& r) { return fmt::format("GPU {}{}", r.gpu, r.name.empty() ? "" : " (" + r.name + ")"); }

}  // namespace

DeviceSummary SummarizeDevices(const std::vector<DeviceReport>& reports, bool require_gpu) {
  DeviceSummary s;
  for (const auto& d : reports) {
    DeviceRow row;
    row.gpu = d.gpu;
    row.name = d.name;
    row.exit_code = d.report.ExitCode(require_gpu);
    row.summary = SummaryLine(d.report, require_gpu);
    const Finding* cuda = d.report.Find("e2e.cuda");
    if (cuda != nullptr && cuda->verdict == Verdict::kPass) row.median_ms = Fact(d.report, "e2e.cuda", "median_ms");
    row.h2d_gbps = Fact(d.report, "health.copy", "pinned_h2d_gbps");
    s.rows.push_back(std::move(row));
  }
  double best_copy = 0;
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const DeviceRow& r = s.rows[i];
    if (r.h2d_gbps) best_copy = std::max(best_copy, *r.h2d_gbps);
    if (!r.median_ms) continue;
    if (!s.fastest || *r.median_ms < *s.rows[*s.fastest].median_ms) s.fastest = i;
    if (!s.slowest || *r.median_ms > *s.rows[*s.slowest].median_ms) s.slowest = i;
  }
  if (s.fastest && s.slowest && *s.fastest != *s.slowest) {
    const DeviceRow& fast = s.rows[*s.fastest];
    for (const auto& r : s.rows) {
      if (r.median_ms && *r.median_ms > kSlowMedianFactor * *fast.median_ms) {
        s.notes.push_back(fmt::format("GPU {} takes {:.2f}x GPU {}'s time for the same run: see its health findings "
                                      "(clocks, PCIe link, other processes)",
                                      r.gpu, *r.median_ms / *fast.median_ms, fast.gpu));
      }
    }
  } else {
    s.fastest.reset();
    s.slowest.reset();
  }
  for (const auto& r : s.rows) {
    if (r.h2d_gbps && best_copy > 0 && *r.h2d_gbps < kSlowCopyShare * best_copy) {
      s.notes.push_back(fmt::format("GPU {} copies from the host at {:.1f} GB/s against {:.1f} on the best: a "
                                    "narrower or slower PCIe link, or a CPU socket far from it (health.pcie, "
                                    "health.copy)",
                                    r.gpu, *r.h2d_gbps, best_copy));
    }
  }
  return s;
}

std::string RenderDeviceSummary(const DeviceSummary& s) {
  std::string out = "GPUs side by side:\n";
  out += fmt::format("  {:<36} {:>12} {:>14}  {}\n", "GPU", "e2e median", "H2D pinned", "verdict");
  for (const auto& r : s.rows) {
    out += fmt::format("  {:<36} {:>12} {:>14}  {}\n", Gpu(r),
                       r.median_ms ? fmt::format("{:.3f} ms", *r.median_ms) : std::string("-"),
                       r.h2d_gbps ? fmt::format("{:.1f} GB/s", *r.h2d_gbps) : std::string("-"), r.summary);
  }
  if (s.fastest) {
    out += fmt::format("fastest: {}, {:.3f} ms; slowest: {}, {:.3f} ms (the built-in model end to end)\n",
                       Gpu(s.rows[*s.fastest]), *s.rows[*s.fastest].median_ms, Gpu(s.rows[*s.slowest]),
                       *s.rows[*s.slowest].median_ms);
  }
  for (const auto& n : s.notes) out += "note: " + n + "\n";
  return out;
}

nlohmann::json RenderDevicesJson(const std::vector<DeviceReport>& reports, const DeviceSummary& s, bool require_gpu,
                                 const nlohmann::json& header) {
  nlohmann::json j = header;
  j["devices"] = nlohmann::json::array();
  for (size_t i = 0; i < s.rows.size() && i < reports.size(); ++i) {
    const DeviceRow& r = s.rows[i];
    nlohmann::json d;
    d["gpu"] = r.gpu;
    d["name"] = r.name;
    d["exit_code"] = r.exit_code;
    d["median_ms"] = r.median_ms ? nlohmann::json(*r.median_ms) : nlohmann::json(nullptr);
    d["pinned_h2d_gbps"] = r.h2d_gbps ? nlohmann::json(*r.h2d_gbps) : nlohmann::json(nullptr);
    d["report"] = RenderJson(reports[i].report, require_gpu, nlohmann::json::object());
    j["devices"].push_back(std::move(d));
  }
  j["fastest"] = s.fastest ? nlohmann::json(s.rows[*s.fastest].gpu) : nlohmann::json(nullptr);
  j["slowest"] = s.slowest ? nlohmann::json(s.rows[*s.slowest].gpu) : nlohmann::json(nullptr);
  j["notes"] = s.notes;
  j["exit_code"] = DevicesExitCode(s);
  return j;
}

int DevicesExitCode(const DeviceSummary& s) {
  int code = 0;
  for (const auto& r : s.rows) code = std::max(code, r.exit_code);
  return code;
}

}  // namespace ortgpu::doctor
