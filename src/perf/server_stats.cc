#include "perf/server_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ortgpu::perf {
namespace {

DurationStat Diff(const DurationStat& a, const DurationStat& b) { return {a.count - b.count, a.ns - b.ns}; }
DurationStat Sum(const DurationStat& a, const DurationStat& b) { return {a.count + b.count, a.ns + b.ns}; }

DurationStat ReadDuration(const nlohmann::json& stats, const char* key) {
  DurationStat d;
  if (!stats.contains(key) || !stats[key].is_object()) return d;
  d.count = stats[key].value("count", int64_t{0});
  d.ns = stats[key].value("ns", int64_t{0});
  return d;
}

// Mean microseconds of one part, from its own count (a server may count a
// part for fewer requests than succeeded, e.g. cache hits skip compute).
double MeanUs(const DurationStat& d) { return d.count > 0 ? static_cast<double>(d.ns) / 1e3 / static_cast<double>(d.count) : 0.0; }

}  // namespace

InferenceCounters operator-(const InferenceCounters& a, const InferenceCounters& b) {
  InferenceCounters d;
  d.success = Diff(a.success, b.success);
  d.fail = Diff(a.fail, b.fail);
  d.queue = Diff(a.queue, b.queue);
  d.compute_input = Diff(a.compute_input, b.compute_input);
  d.compute_infer = Diff(a.compute_infer, b.compute_infer);
  d.compute_output = Diff(a.compute_output, b.compute_output);
  d.inference_count = a.inference_count - b.inference_count;
  d.execution_count = a.execution_count - b.execution_count;
  return d;
}

InferenceCounters operator+(const InferenceCounters& a, const InferenceCounters& b) {
  InferenceCounters s;
  s.success = Sum(a.success, b.success);
  s.fail = Sum(a.fail, b.fail);
  s.queue = Sum(a.queue, b.queue);
  s.compute_input = Sum(a.compute_input, b.compute_input);
  s.compute_infer = Sum(a.compute_infer, b.compute_infer);
  s.compute_output = Sum(a.compute_output, b.compute_output);
  s.inference_count = a.inference_count + b.inference_count;
  s.execution_count = a.execution_count + b.execution_count;
  return s;
}

Expected<InferenceCounters> ParseModelStatistics(std::string_view json_text, const std::string& model,
                                                 const std::string& version) {
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("model_stats") || !j["model_stats"].is_array()) {
    return InvalidArgument("the statistics answer is not {\"model_stats\": [...]}: " + std::string(json_text.substr(0, 200)));
  }
  InferenceCounters total;
  bool found = false;
  for (const auto& m : j["model_stats"]) {
    if (m.value("name", "") != model) continue;
    if (!version.empty() && m.value("version", "") != version) continue;
    found = true;
    InferenceCounters c;
    c.inference_count = m.value("inference_count", int64_t{0});
    c.execution_count = m.value("execution_count", int64_t{0});
    if (m.contains("inference_stats") && m["inference_stats"].is_object()) {
      const auto& s = m["inference_stats"];
      c.success = ReadDuration(s, "success");
      c.fail = ReadDuration(s, "fail");
      c.queue = ReadDuration(s, "queue");
      c.compute_input = ReadDuration(s, "compute_input");
      c.compute_infer = ReadDuration(s, "compute_infer");
      c.compute_output = ReadDuration(s, "compute_output");
    }
    total = total + c;
  }
  if (!found) return NotFound("the statistics name no model '" + model + "'" + (version.empty() ? "" : " version " + version));
  return total;
}

std::optional<ServerSplit> ComputeSplit(const InferenceCounters& d) {
  if (d.success.count <= 0) return std::nullopt;
  ServerSplit s;
  s.requests = d.success.count;
  s.request_us = MeanUs(d.success);
  s.queue_us = MeanUs(d.queue);
  s.compute_input_us = MeanUs(d.compute_input);
  s.compute_infer_us = MeanUs(d.compute_infer);
  s.compute_output_us = MeanUs(d.compute_output);
  s.overhead_us = std::max(0.0, s.request_us - s.queue_us - s.compute_input_us - s.compute_infer_us - s.compute_output_us);
  if (d.execution_count > 0) s.average_batch = static_cast<double>(d.inference_count) / static_cast<double>(d.execution_count);
  return s;
}

std::vector<MetricSample> ParsePrometheusText(std::string_view text) {
  std::vector<MetricSample> out;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    MetricSample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
    s.name = std::string(line.substr(0, i));
    bool ok = !s.name.empty();
    if (ok && i < line.size() && line[i] == '{') {
      ++i;
      while (ok && i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          ok = false;
          break;
        }
        std::string key(line.substr(i, eq - i));
        key.erase(0, key.find_first_not_of(" ,"));
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) {
          ok = false;
          break;
        }
        s.labels[key] = value;
        i = j + 1;
        while (i < line.size() && (line[i] == ',' || line[i] == ' ')) ++i;
      }
      if (i >= line.size()) ok = false;
      ++i;
    }
    if (!ok) continue;
    std::string_view rest = line.substr(std::min(i, line.size()));
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    const std::string value(rest.substr(0, rest.find(' ')));  // a timestamp may follow
    if (value.empty()) continue;
    char* end = nullptr;
    s.value = std::strtod(value.c_str(), &end);  // strtod reads NaN, +Inf, -Inf
    if (end == value.c_str()) continue;
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

GpuDeviceSample& DeviceOf(GpuSample& g, const MetricSample& s) {
  auto it = s.labels.find("gpu_uuid");
  const std::string uuid = it != s.labels.end() ? it->second : "";
  for (auto& d : g.devices) {
    if (d.uuid == uuid && !uuid.empty()) return d;
  }
  g.devices.push_back({uuid, 0, 0});
  return g.devices.back();
}

std::string ShortUuid(const std::string& uuid) {
  if (uuid.empty()) return "a GPU";
  return uuid.size() > 12 ? uuid.substr(0, 12) + ".." : uuid;
}

}  // namespace

std::optional<GpuSample> GpuFromMetrics(const std::vector<MetricSample>& samples) {
  GpuSample g;
  double utilization = 0;
  for (const auto& s : samples) {
    if (s.name == "nv_gpu_utilization" && std::isfinite(s.value)) {
      ++g.gpus;
      utilization += s.value;
      DeviceOf(g, s).utilization = s.value;
    } else if (s.name == "nv_gpu_memory_used_bytes" && std::isfinite(s.value)) {
      g.memory_used_bytes += s.value;
      DeviceOf(g, s).memory_used_bytes = s.value;
    } else if (s.name == "nv_cpu_utilization" && std::isfinite(s.value)) {
      g.host_cpu = s.value;
    }
  }
  if (g.gpus == 0 && !g.host_cpu) return std::nullopt;
  if (g.gpus > 0) g.utilization = utilization / g.gpus;
  return g;
}

void MergeGpuSample(GpuSample& a, const GpuSample& b) {
  a.utilization = (a.utilization + b.utilization) / 2;
  if (a.host_cpu && b.host_cpu) {
    a.host_cpu = (*a.host_cpu + *b.host_cpu) / 2;
  } else if (b.host_cpu) {
    a.host_cpu = b.host_cpu;
  }
  a.memory_used_bytes = std::max(a.memory_used_bytes, b.memory_used_bytes);
  a.gpus = std::max(a.gpus, b.gpus);
  for (const auto& d : b.devices) {
    GpuDeviceSample* same = nullptr;
    for (auto& e : a.devices) {
      if (e.uuid == d.uuid) same = &e;
    }
    if (same == nullptr) {
      a.devices.push_back(d);
      continue;
    }
    same->utilization = (same->utilization + d.utilization) / 2;
    same->memory_used_bytes = std::max(same->memory_used_bytes, d.memory_used_bytes);
  }
}

std::string DescribeGpuImbalance(const GpuSample& g) {
  if (g.devices.size() < 2) return "";
  const GpuDeviceSample* busy = &g.devices.front();
  const GpuDeviceSample* idle = &g.devices.front();
  for (const auto& d : g.devices) {
    if (d.utilization > busy->utilization) busy = &d;
    if (d.utilization < idle->utilization) idle = &d;
  }
  if (busy->utilization < 0.5 || busy->utilization - idle->utilization < 0.3) return "";
  return fmt::format("{} at {:.0f}% while {} at {:.0f}%: the load is not spread over the GPUs (instance_group "
                     "gpus, or another process on the busy one)",
                     ShortUuid(busy->uuid), busy->utilization * 100, ShortUuid(idle->uuid), idle->utilization * 100);
}

}  // namespace ortgpu::perf
