// bench --device all (issue #30 item 3): the same benchmark on each visible
// GPU, side by side, with the fastest and the slowest named. Several GPUs of
// one model on one host should measure alike; one that does not has a fault
// worth finding (a narrower PCIe link, a clock brake, another process).
//
// RunOnDevices runs the caller's benchmark once per GPU, with the CUDA EP's
// device_id set; CompareDevices and the renderers are pure. Thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/benchmark.h"
#include "bench/result.h"
#include "status/status.h"

namespace ortgpu::bench {

struct DeviceRun {
  int gpu = 0;       // CUDA ordinal (after CUDA_VISIBLE_DEVICES)
  std::string name;  // "NVIDIA H200"; "" when unknown
  Status error;      // not OK: the benchmark did not run on this GPU (why)
  BenchReport report;
};

// One benchmark per GPU of `gpus` (ordinal, name), each with
// session.cuda_options["device_id"] set to it; a GPU whose run fails keeps
// its error and the others still run.
std::vector<DeviceRun> RunOnDevices(const BenchOptions& options, const std::vector<std::pair<int, std::string>>& gpus,
                                    const std::function<Expected<BenchReport>(const BenchOptions&)>& run);

struct DeviceRow {
  int gpu = 0;
  std::string name;
  std::string error;        // why nothing was measured on it ("" when measured)
  double items_per_s = 0;   // its best throughput over the configurations measured
  std::string best_at;      // where: "io=bound batch 32" (ConfigurationLabel)
  std::optional<double> p50_ms;  // its lowest p50 at the smallest batch and concurrency
};

struct DeviceComparison {
  std::vector<DeviceRow> rows;  // in GPU order
  // Indices into rows, by best throughput; set when two GPUs or more were
  // measured.
  std::optional<size_t> fastest;
  std::optional<size_t> slowest;
  // Slowest throughput / fastest's (1 when alike); 0 without both.
  double ratio = 0;
};

// Reading below this share of the fastest GPU's throughput is worth a look.
inline constexpr double kSlowGpuShare = 0.90;

DeviceComparison CompareDevices(const std::vector<DeviceRun>& runs);

// The side-by-side table, then "fastest: ... slowest: ..." and, when the
// slowest is under kSlowGpuShare of the fastest, what to check.
std::string RenderDeviceComparison(const DeviceComparison& comparison);

// {"devices": [{"gpu", "name", "error", "best_items_per_s", "best_at",
// "p50_ms", "report": <RenderJson of its report>}], "fastest", "slowest",
// "ratio"}.
std::string RenderDevicesJson(const DeviceComparison& comparison, const std::vector<DeviceRun>& runs);

}  // namespace ortgpu::bench
