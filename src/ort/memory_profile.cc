#include "ort/memory_profile.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace ortgpu {

std::string FormatMiB(double bytes) {
  const double mib = bytes / (1024.0 * 1024.0);
  if (mib >= 1024.0) return fmt::format("{:.2f} GiB", mib / 1024.0);
  return fmt::format("{:.1f} MiB", mib);
}

namespace {

// The straight prediction through a and b at `batch`, flat at the larger
// of the two when the bytes fall as the batch grows.
double Segment(const MemoryPoint& a, const MemoryPoint& b, int64_t batch) {
  if (b.batch == a.batch || b.bytes < a.bytes) return std::max(a.bytes, b.bytes);
  const double slope = (b.bytes - a.bytes) / static_cast<double>(b.batch - a.batch);
  return a.bytes + slope * static_cast<double>(batch - a.batch);
}

// The segment of `knots` (ascending, at least two) that `batch` falls in,
// the first and last extended.
double Piecewise(const std::vector<MemoryPoint>& knots, int64_t batch) {
  size_t i = 0;
  while (i + 2 < knots.size() && batch > knots[i + 1].batch) ++i;
  return Segment(knots[i], knots[i + 1], batch);
}

}  // namespace

double MemoryFit::Predict(int64_t batch) const {
  if (knots.size() >= 3) return std::max(0.0, Piecewise(knots, batch));
  return std::max(0.0, fixed_bytes + per_row_bytes * static_cast<double>(batch));
}

double MemoryFit::RowBytes(int64_t rows) const {
  rows = std::max<int64_t>(rows, 0);
  if (knots.size() >= 3) return std::max(0.0, Piecewise(knots, rows) - Piecewise(knots, 0));
  return std::max(0.0, per_row_bytes) * static_cast<double>(rows);
}

std::string MemoryFit::Describe() const {
  std::string out;
  if (knots.size() >= 3) {
    std::vector<std::string> at;
    for (const MemoryPoint& k : knots) at.push_back(fmt::format("{} ({})", k.batch, FormatMiB(k.bytes)));
    out = "straight between batch ";
    for (size_t i = 0; i < at.size(); ++i) out += (i == 0 ? "" : i + 1 == at.size() ? " and " : ", ") + at[i];
    if (line_miss_batch) {
      out += fmt::format(" (one line through {} and {} missed batch {} by {:+.1f}%", knots.front().batch, knots.back().batch,
                         *line_miss_batch, 100.0 * line_miss_error);
      if (check_batch) out += fmt::format("; batch {} off by {:+.1f}%", *check_batch, 100.0 * check_error);
      out += ")";
    }
    return out;
  }
  out = FormatMiB(fixed_bytes) + " + " + FormatMiB(per_row_bytes) + " per row";
  if (through.size() == 1) return out + fmt::format(" (one size measured, batch {}: the per-row part is unknown)", through[0]);
  if (through.size() == 2) {
    out += fmt::format(" (through batch {} and {}", through[0], through[1]);
    if (check_batch) out += fmt::format("; batch {} off by {:+.1f}%", *check_batch, 100.0 * check_error);
    out += ")";
  }
  return out;
}

Expected<MemoryFit> FitMemory(std::vector<MemoryPoint> points) {
  if (points.empty()) return InvalidArgument("no memory measurement to fit a line through");
  std::map<int64_t, double> by_batch;
  for (const auto& p : points) {
    if (p.batch < 1) return InvalidArgument(fmt::format("a memory measurement at batch {}: batch sizes start at 1", p.batch));
    double& b = by_batch[p.batch];
    b = std::max(b, p.bytes);
  }
  MemoryFit fit;
  const auto& [lo_batch, lo_bytes] = *by_batch.begin();
  const auto& [hi_batch, hi_bytes] = *by_batch.rbegin();
  if (by_batch.size() == 1) {
    fit.fixed_bytes = lo_bytes;
    fit.through = {lo_batch};
    return fit;
  }
  fit.through = {lo_batch, hi_batch};
  const double slope = (hi_bytes - lo_bytes) / static_cast<double>(hi_batch - lo_batch);
  if (slope < 0) {
    // The arena did not grow with the batch: the most it held is the plan.
    fit.fixed_bytes = std::max(lo_bytes, hi_bytes);
  } else {
    fit.per_row_bytes = slope;
    fit.fixed_bytes = lo_bytes - slope * static_cast<double>(lo_batch);
  }
  // The worst miss among the sizes the prediction does not pass through.
  auto worst = [&](std::optional<int64_t>& batch_out, double& error_out) {
    batch_out.reset();
    error_out = 0;
    for (const auto& [batch, bytes] : by_batch) {
      if (bytes <= 0 || std::find(fit.through.begin(), fit.through.end(), batch) != fit.through.end()) continue;
      const double error = (fit.Predict(batch) - bytes) / bytes;
      if (!batch_out || std::abs(error) > std::abs(error_out)) {
        batch_out = batch;
        error_out = error;
      }
    }
  };
  worst(fit.check_batch, fit.check_error);
  // Bend the line at each size it misses by more than kKnotError, worst
  // first, until the sizes left are within it.
  while (fit.check_batch && std::abs(fit.check_error) > kKnotError) {
    if (fit.knots.empty()) {
      fit.line_miss_batch = fit.check_batch;
      fit.line_miss_error = fit.check_error;
    }
    fit.through.push_back(*fit.check_batch);
    std::sort(fit.through.begin(), fit.through.end());
    fit.knots.clear();
    for (int64_t b : fit.through) fit.knots.push_back({b, by_batch.at(b)});
    worst(fit.check_batch, fit.check_error);
  }
  return fit;
}

std::string MemorySplit::Describe() const {
  std::string out = FormatMiB(static_cast<double>(total())) + ": weights " + FormatMiB(static_cast<double>(weights)) +
                    ", arena " + FormatMiB(static_cast<double>(arena_reserved)) + " reserved (" +
                    FormatMiB(static_cast<double>(arena_in_use)) + " in use)";
  out += other ? ", other " + FormatMiB(static_cast<double>(*other)) : ", other not measured";
  return out;
}

double PredictInstanceBytes(const MemoryProfile& profile, const std::vector<int64_t>& session_rows,
                            int runs_per_session) {
  const double more_runs = std::max(runs_per_session, 1) - 1;
  double sum = 0;
  for (int64_t rows : session_rows) {
    sum += profile.session.Predict(rows) + more_runs * profile.session.RowBytes(rows);
  }
  return sum;
}

uint64_t PredictPeak(const MemoryProfile& profile, const MemoryShape& shape) {
  const double per_instance = PredictInstanceBytes(profile, shape.session_rows, shape.runs_per_session);
  const double total = static_cast<double>(profile.shared_weights) + static_cast<double>(profile.other) +
                       static_cast<double>(std::max(shape.instances, 0)) * per_instance;
  return static_cast<uint64_t>(std::llround(total));
}

nlohmann::json MemoryProfileToJson(const MemoryProfile& p) {
  nlohmann::json fit = {{"fixed_bytes", p.session.fixed_bytes},
                        {"per_row_bytes", p.session.per_row_bytes},
                        {"through", p.session.through}};
  if (p.session.check_batch) {
    fit["check_batch"] = *p.session.check_batch;
    fit["check_error"] = p.session.check_error;
  }
  if (p.session.knots.size() >= 3) {
    nlohmann::json knots = nlohmann::json::array();
    for (const MemoryPoint& k : p.session.knots) knots.push_back({k.batch, k.bytes});
    fit["knots"] = std::move(knots);
    if (p.session.line_miss_batch) {
      fit["line_miss_batch"] = *p.session.line_miss_batch;
      fit["line_miss_error"] = p.session.line_miss_error;
    }
  }
  return {{"session", fit},
          {"shared_weights_bytes", p.shared_weights},
          {"other_bytes", p.other},
          {"measured", {{"session_rows", p.measured_shape.session_rows},
                        {"instances", p.measured_shape.instances},
                        {"total_bytes", p.measured_total}}}};
}

Expected<MemoryProfile> MemoryProfileFromJson(const nlohmann::json& j) {
  MemoryProfile p;
  try {
    const auto& fit = j.at("session");
    p.session.fixed_bytes = fit.at("fixed_bytes").get<double>();
    p.session.per_row_bytes = fit.at("per_row_bytes").get<double>();
    p.session.through = fit.at("through").get<std::vector<int64_t>>();
    if (fit.contains("check_batch")) {
      p.session.check_batch = fit.at("check_batch").get<int64_t>();
      p.session.check_error = fit.at("check_error").get<double>();
    }
    // Profiles written before knots have none: the straight line.
    if (fit.contains("knots")) {
      for (const auto& k : fit.at("knots")) p.session.knots.push_back({k.at(0).get<int64_t>(), k.at(1).get<double>()});
      if (fit.contains("line_miss_batch")) {
        p.session.line_miss_batch = fit.at("line_miss_batch").get<int64_t>();
        p.session.line_miss_error = fit.at("line_miss_error").get<double>();
      }
    }
    p.shared_weights = j.at("shared_weights_bytes").get<uint64_t>();
    p.other = j.at("other_bytes").get<uint64_t>();
    const auto& m = j.at("measured");
    p.measured_shape.session_rows = m.at("session_rows").get<std::vector<int64_t>>();
    p.measured_shape.instances = m.at("instances").get<int>();
    p.measured_total = m.at("total_bytes").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("not a memory profile: ") + e.what());
  }
  if (p.session.through.empty() || p.measured_shape.instances < 1) {
    return InvalidArgument("not a memory profile: no measured batch size or instance");
  }
  return p;
}

}  // namespace ortgpu
