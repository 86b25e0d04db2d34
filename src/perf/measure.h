// Measurement as perf_analyzer does it: a load step is measured in time
// windows (--measurement-interval, 5 s by default); it counts once the last
// 3 windows agree within 10% (--stability-percentage) on throughput and on
// the latency percentile (--percentile, p95 by default), each window within
// that share of the three's mean. After --max-trials windows (10) without
// that, the step is reported from its last 3 windows and marked unstable.
// A window in which every request failed ends the step at once.
//
// MeasureStep is pure over a window source (the real one drives the load
// client and reads the server's statistics; tests pass hand-made windows),
// so the stability rules are unit-tested without a server or a clock.
// Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "perf/server_stats.h"
#include "status/expected.h"

namespace ortgpu::perf {

struct MeasureOptions {
  int64_t window_ms = 5000;    // --measurement-interval
  double stability = 0.10;     // --stability-percentage / 100
  int max_trials = 10;         // --max-trials: windows before "unstable"
  int stable_windows = 3;      // windows that must agree
  double percentile = 95;      // the latency the stability check compares
};

// What one window saw. Latencies are of successful (HTTP 200) requests only.
struct Window {
  double duration_s = 0;
  std::vector<double> latencies_ms;
  std::map<std::string, int64_t> errors;  // "500", "timeout", "connection" -> count
  int64_t delayed = 0;                    // open loop: sends that waited for a connection
  std::optional<InferenceCounters> server;  // statistics delta over the window
  std::optional<GpuSample> gpu;             // scraped at the window's end
};

// One window's headline figures, kept for the report.
struct WindowSummary {
  double throughput = 0;  // successful requests per second
  double latency_ms = 0;  // the stability percentile
  int64_t errors = 0;
};
WindowSummary Summarize(const Window& w, double percentile);

// True when each of the last `options.stable_windows` windows is within
// options.stability of their mean, on throughput and on latency (and every
// one of them has a successful request).
bool IsStable(const std::vector<WindowSummary>& windows, const MeasureOptions& options);

struct StepMeasurement {
  std::vector<WindowSummary> windows;  // every window measured, in order
  bool stable = false;
  bool all_failed = false;   // the last window had errors and no success
  std::string note;          // why it is not stable, or what failed
  Window merged;             // the windows the step counts, merged (durations and counters added)
};

// Calls `next_window` until stability, max_trials, or a window with only
// failures. Errors from `next_window` are returned as they are.
// REQUIRES: options.stable_windows >= 1, max_trials >= stable_windows.
Expected<StepMeasurement> MeasureStep(const MeasureOptions& options, const std::function<Expected<Window>()>& next_window);

// `a` with `b`'s samples, errors and counters added.
void MergeInto(Window& a, const Window& b);

// "HTTP 500 x 12, timeout x 3": an error map for notes.
std::string DescribeErrors(const std::map<std::string, int64_t>& errors);

}  // namespace ortgpu::perf
