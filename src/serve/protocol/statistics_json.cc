#include "serve/protocol/statistics_json.h"

namespace ortgpu::serve::protocol {
namespace {

nlohmann::json DurationJson(const Duration& d) { return {{"count", d.count}, {"ns", d.ns}}; }

nlohmann::json VersionJson(const StatsSnapshot& s) {
  nlohmann::json batch = nlohmann::json::array();
  for (const auto& [size, f] : s.batches) {
    batch.push_back({{"batch_size", size},
                     {"compute_input", DurationJson(f.compute_input)},
                     {"compute_infer", DurationJson(f.compute_infer)},
                     {"compute_output", DurationJson(f.compute_output)}});
  }
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& m : s.memory_usage) memory.push_back({{"type", m.type}, {"id", m.id}, {"byte_size", m.byte_size}});
  return {{"name", s.name},
          {"version", s.version},
          {"last_inference", s.last_inference_ms},
          {"inference_count", s.inference_count},
          {"execution_count", s.execution_count},
          {"inference_stats",
           {{"success", DurationJson(s.success)},
            {"fail", DurationJson(s.fail)},
            {"queue", DurationJson(s.queue)},
            {"compute_input", DurationJson(s.compute_input)},
            {"compute_infer", DurationJson(s.compute_infer)},
            {"compute_output", DurationJson(s.compute_output)}}},
          {"batch_stats", batch},
          {"memory_usage", memory}};
}

}  // namespace

nlohmann::json StatisticsToJson(const std::vector<StatsSnapshot>& versions) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& v : versions) list.push_back(VersionJson(v));
  return {{"model_stats", list}};
}

}  // namespace ortgpu::serve::protocol
