// doctor --device all (issue #30 item 3): every layer checked once per
// visible GPU (health, the copy test, the end-to-end run, placement, the
// user's models), then the GPUs side by side: each one's verdict, its
// end-to-end CUDA median and its pinned host-to-device bandwidth, the
// fastest and the slowest named. Pure over the reports; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/finding.h"

namespace ortgpu::doctor {

struct DeviceReport {
  int gpu = 0;       // CUDA ordinal (after CUDA_VISIBLE_DEVICES)
  std::string name;  // "NVIDIA H200"
  Report report;
};

struct DeviceRow {
  int gpu = 0;
  std::string name;
  int exit_code = 0;                   // the report's ExitCode
  std::string summary;                 // its SummaryLine
  std::optional<double> median_ms;     // e2e.cuda's median: the built-in model on this GPU
  std::optional<double> h2d_gbps;      // health.copy's pinned host-to-device rate
};

struct DeviceSummary {
  std::vector<DeviceRow> rows;
  // Indices into rows by the end-to-end median; set with two GPUs or more
  // that ran it.
  std::optional<size_t> fastest;
  std::optional<size_t> slowest;
  std::vector<std::string> notes;  // a GPU far slower, or copying far slower, than the best
};

// A GPU whose median is this many times the fastest's, or whose copies reach
// less than kSlowCopyShare of the best, is named in a note.
inline constexpr double kSlowMedianFactor = 1.25;
inline constexpr double kSlowCopyShare = 0.8;

DeviceSummary SummarizeDevices(const std::vector<DeviceReport>& reports, bool require_gpu);
std::string RenderDeviceSummary(const DeviceSummary& summary);
// {"devices": [{"gpu", "name", "exit_code", "median_ms", "pinned_h2d_gbps",
// "report": <RenderJson>}], "fastest", "slowest", "notes"}.
nlohmann::json RenderDevicesJson(const std::vector<DeviceReport>& reports, const DeviceSummary& summary,
                                 bool require_gpu, const nlohmann::json& header);
// The worst exit code of the reports (0 with none).
int DevicesExitCode(const DeviceSummary& summary);

}  // namespace ortgpu::doctor
