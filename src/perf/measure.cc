#include "perf/measure.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/statistics.h"

namespace ortgpu::perf {
namespace {

int64_t ErrorCount(const Window& w) {
  int64_t n = 0;
  for (const auto& [code, count] : w.errors) n += count;
  return n;
}

bool WithinOfMean(const std::vector<double>& values, double tolerance) {
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  if (mean <= 0) return false;
  return std::all_of(values.begin(), values.end(), [&](double v) { return std::abs(v - mean) <= tolerance * mean; });
}

}  // namespace

WindowSummary Summarize(const Window& w, double percentile) {
  WindowSummary s;
  s.errors = ErrorCount(w);
  if (w.duration_s > 0) s.throughput = static_cast<double>(w.latencies_ms.size()) / w.duration_s;
  if (!w.latencies_ms.empty()) {
    std::vector<double> sorted = w.latencies_ms;
    std::sort(sorted.begin(), sorted.end());
    s.latency_ms = bench::Percentile(sorted, percentile);
  }
  return s;
}

bool IsStable(const std::vector<WindowSummary>& windows, const MeasureOptions& o) {
  const auto n = static_cast<size_t>(o.stable_windows);
  if (windows.size() < n || n == 0) return false;
  std::vector<double> throughput, latency;
  for (size_t i = windows.size() - n; i < windows.size(); ++i) {
    if (windows[i].throughput <= 0) return false;
    throughput.push_back(windows[i].throughput);
    latency.push_back(windows[i].latency_ms);
  }
  return WithinOfMean(throughput, o.stability) && WithinOfMean(latency, o.stability);
}

void MergeInto(Window& a, const Window& b) {
  a.duration_s += b.duration_s;
  a.latencies_ms.insert(a.latencies_ms.end(), b.latencies_ms.begin(), b.latencies_ms.end());
  for (const auto& [code, count] : b.errors) a.errors[code] += count;
  a.delayed += b.delayed;
  if (a.server && b.server) {
    a.server = *a.server + *b.server;
  } else {
    a.server.reset();  // a window without statistics: no split for the step
  }
  if (b.gpu) {
    if (!a.gpu) {
      a.gpu = b.gpu;
    } else {
      MergeGpuSample(*a.gpu, *b.gpu);  // utilisation averaged over the windows, memory at its highest
    }
  }
}

std::string DescribeErrors(const std::map<std::string, int64_t>& errors) {
  std::string s;
  for (const auto& [code, count] : errors) {
    const bool http = !code.empty() && std::isdigit(static_cast<unsigned char>(code[0]));
    s += fmt::format("{}{}{} x {}", s.empty() ? "" : ", ", http ? "HTTP " : "", code, count);
  }
  return s;
}

Expected<StepMeasurement> MeasureStep(const MeasureOptions& o, const std::function<Expected<Window>()>& next_window) {
  StepMeasurement m;
  std::vector<Window> kept;  // the last stable_windows windows
  for (int trial = 0; trial < o.max_trials; ++trial) {
    ORTGPU_ASSIGN_OR_RETURN(Window w, next_window());
    m.windows.push_back(Summarize(w, o.percentile));
    const bool failed = w.latencies_ms.empty() && !w.errors.empty();
    kept.push_back(std::move(w));
    if (kept.size() > static_cast<size_t>(o.stable_windows)) kept.erase(kept.begin());
    if (failed) {
      m.all_failed = true;
      m.note = "every request in the window failed (" + DescribeErrors(kept.back().errors) + ")";
      m.merged = std::move(kept.back());
      return m;
    }
    if (IsStable(m.windows, o)) {
      m.stable = true;
      break;
    }
  }
  if (!m.stable) {
    m.note = fmt::format("never became stable: {} windows of {} ms without {} in a row within {:.0f}% on throughput and p{:g}; "
                         "figures are from the last {} (raise --max-trials or --measurement-interval)",
                         m.windows.size(), o.window_ms, o.stable_windows, o.stability * 100, o.percentile, kept.size());
  }
  m.merged = std::move(kept.front());
  for (size_t i = 1; i < kept.size(); ++i) MergeInto(m.merged, kept[i]);
  return m;
}

}  // namespace ortgpu::perf
