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

double MemoryFit::Predict(int64_t batch) const {
  return std::max(0.0, fixed_bytes + per_row_bytes * static_cast<double>(batch));
}

std::string MemoryFit::Describe() const {
  std::string out = FormatMiB(fixed_bytes) + " + " + FormatMiB(per_row_bytes) + " per row";
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
  for (const auto& [batch, bytes] : by_batch) {
    if (batch == lo_batch || batch == hi_batch || bytes <= 0) continue;
    const double error = (fit.Predict(batch) - bytes) / bytes;
    if (!fit.check_batch || std::abs(error) > std::abs(fit.check_error)) {
      fit.check_batch = batch;
      fit.check_error = error;
    }
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
    sum += profile.session.Predict(rows) +
           more_runs * std::max(0.0, profile.session.per_row_bytes) * static_cast<double>(std::max<int64_t>(rows, 0));
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
