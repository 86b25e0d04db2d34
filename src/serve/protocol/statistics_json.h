// The statistics extension's JSON form (GET /v2/models[/M[/versions/V]]/stats):
// {"model_stats": [{"name", "version", "last_inference", "inference_count",
// "execution_count", "inference_stats": {...}, "batch_stats": [...],
// "memory_usage": [{"type", "id", "byte_size"}]}]}, each duration {"count",
// "ns"}, as Triton writes it. Pure functions.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "serve/scheduler/model_stats.h"

namespace ortgpu::serve::protocol {

nlohmann::json StatisticsToJson(const std::vector<StatsSnapshot>& versions);

}  // namespace ortgpu::serve::protocol
