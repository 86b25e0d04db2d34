#include "tune/history.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ortgpu::tune {

namespace {

// The served measurement's details for the report, optional in a line (a
// history written before them lacks them): "steps" as [load, items/s, p99 ms]
// triples, "gpu_memory_bytes", "load_s". A malformed detail is skipped, not
// an error: the measurement itself is what the search needs.
void ReadServedDetails(const nlohmann::json& j, Measurement& m) {
  if (j.contains("steps") && j["steps"].is_array()) {
    for (const nlohmann::json& s : j["steps"]) {
      if (s.is_array() && s.size() == 3 && s[0].is_number() && s[1].is_number() && s[2].is_number()) {
        m.steps.push_back({s[0].get<double>(), s[1].get<double>(), s[2].get<double>()});
      }
    }
  }
  if (j.contains("gpu_memory_bytes") && j["gpu_memory_bytes"].is_number()) {
    m.gpu_memory_bytes = j["gpu_memory_bytes"].get<double>();
  }
  if (j.contains("load_s") && j["load_s"].is_number()) m.load_s = j["load_s"].get<double>();
}

void WriteServedDetails(const Measurement& m, nlohmann::json& j) {
  if (!m.steps.empty()) {
    nlohmann::json steps = nlohmann::json::array();
    for (const LoadStep& s : m.steps) steps.push_back({s.load, s.items_per_s, s.p99_ms});
    j["steps"] = std::move(steps);
  }
  if (m.gpu_memory_bytes) j["gpu_memory_bytes"] = *m.gpu_memory_bytes;
  if (m.load_s) j["load_s"] = *m.load_s;
}

Expected<HistoryEntry> ParseLine(std::string_view line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("not a JSON object");
  if (!j.contains("key") || !j["key"].is_string()) return InvalidArgument("no \"key\" string");
  HistoryEntry e;
  e.key = j["key"].get<std::string>();
  e.repeat = j.value("repeat", 0);
  if (j.contains("error") && j["error"].is_string()) e.error = j["error"].get<std::string>();
  if (e.error.empty() && !(j.contains("items_per_s") && j["items_per_s"].is_number())) {
    return InvalidArgument("neither \"items_per_s\" nor \"error\"");
  }
  e.measurement.latency_ms = j.value("latency_ms", 0.0);
  e.measurement.items_per_s = j.value("items_per_s", 0.0);
  ReadServedDetails(j, e.measurement);
  return e;
}

}  // namespace

Expected<std::vector<HistoryEntry>> ParseHistory(std::string_view text, const std::string& label,
                                                 std::vector<std::string>* warnings, size_t* valid_bytes) {
  std::vector<HistoryEntry> out;
  size_t pos = 0;
  size_t good = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const size_t stop = end == std::string_view::npos ? text.size() : end;
    const std::string_view line = text.substr(pos, stop - pos);
    ++line_no;
    const size_t next = end == std::string_view::npos ? text.size() : end + 1;
    const bool last = text.find_first_not_of(" \t\r\n", next) == std::string_view::npos;
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      Expected<HistoryEntry> e = ParseLine(line);
      // A line without its newline was cut mid-write even when it parses.
      if (!e.ok() || (last && end == std::string_view::npos)) {
        if (!last) {
          return InvalidArgument(fmt::format("{}:{}: {}; this is not a history `ortgpu tune` wrote completely; move "
                                             "it aside to start the search afresh",
                                             label, line_no, e.ok() ? "line not terminated" : e.status().message()));
        }
        if (warnings != nullptr) {
          warnings->push_back(fmt::format("{}:{}: last line is incomplete ({}), probably cut when the search stopped; "
                                          "ignored, and that measurement will be taken again",
                                          label, line_no, e.ok() ? "no newline" : e.status().message()));
        }
        break;
      }
      out.push_back(std::move(e).value());
    }
    pos = next;
    good = pos;
  }
  if (valid_bytes != nullptr) *valid_bytes = good;
  return out;
}

std::string HistoryLine(const HistoryEntry& entry) {
  nlohmann::json j{{"key", entry.key}, {"repeat", entry.repeat}};
  if (entry.ok()) {
    j["latency_ms"] = entry.measurement.latency_ms;
    j["items_per_s"] = entry.measurement.items_per_s;
    WriteServedDetails(entry.measurement, j);
  } else {
    j["error"] = entry.error;
  }
  return j.dump() + "\n";
}

Expected<History> History::Open(const std::string& path, std::vector<std::string>* warnings) {
  History h;
  h.path_ = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return h;
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read the tuning history {}; check its permissions", path));
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  size_t valid = 0;
  ORTGPU_ASSIGN_OR_RETURN(std::vector<HistoryEntry> entries, ParseHistory(text, path, warnings, &valid));
  if (valid < text.size()) {
    // Cut the incomplete line so the next append starts on a line of its own.
    std::filesystem::resize_file(path, valid, ec);
    if (ec) return Internal(fmt::format("cannot cut the incomplete last line of {}: {}", path, ec.message()));
  }
  for (HistoryEntry& e : entries) {
    auto key = std::make_pair(e.key, e.repeat);
    h.entries_[key] = std::move(e);
  }
  return h;
}

const HistoryEntry* History::Find(const std::string& key, int repeat) const {
  auto it = entries_.find({key, repeat});
  return it == entries_.end() ? nullptr : &it->second;
}

Status History::Append(const HistoryEntry& entry) {
  entries_[{entry.key, entry.repeat}] = entry;
  if (path_.empty()) return {};
  std::ofstream out(path_, std::ios::binary | std::ios::app);
  out << HistoryLine(entry);
  out.flush();
  if (!out) return Internal(fmt::format("cannot append to the tuning history {}; is the disk full?", path_));
  return {};
}

}  // namespace ortgpu::tune
