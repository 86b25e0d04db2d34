#include "ort/profile.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ortgpu {
namespace {

std::vector<TensorTypeShape> ParseTypeShapes(const nlohmann::json& arr) {
  // ORT writes [{"float":[1,3,224,224]}, {"int64":[2]}].
  std::vector<TensorTypeShape> out;
  if (!arr.is_array()) return out;
  for (const auto& item : arr) {
    if (!item.is_object()) continue;
    for (const auto& [type, dims] : item.items()) {
      TensorTypeShape ts;
      ts.type = type;
      if (dims.is_array()) {
        for (const auto& d : dims) {
          if (d.is_number_integer()) ts.shape.push_back(d.get<int64_t>());
        }
      }
      out.push_back(std::move(ts));
    }
  }
  return out;
}

}  // namespace

Expected<std::vector<NodeEvent>> ParseProfile(std::string_view json) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_array()) {
    return InvalidArgument("the ORT profile is not a JSON array of trace events");
  }
  std::vector<NodeEvent> events;
  constexpr std::string_view kSuffix = "_kernel_time";
  for (const auto& e : doc) {
    if (!e.is_object() || e.value("cat", "") != "Node") continue;
    const std::string name = e.value("name", "");
    if (name.size() < kSuffix.size() || name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;
    }
    NodeEvent ev;
    ev.node_name = name.substr(0, name.size() - kSuffix.size());
    ev.duration_us = e.value("dur", int64_t{0});
    if (auto it = e.find("args"); it != e.end() && it->is_object()) {
      ev.op_type = it->value("op_name", "");
      ev.provider = it->value("provider", "");
      if (auto in = it->find("input_type_shape"); in != it->end()) ev.inputs = ParseTypeShapes(*in);
      if (auto out = it->find("output_type_shape"); out != it->end()) ev.outputs = ParseTypeShapes(*out);
    }
    events.push_back(std::move(ev));
  }
  return events;
}

Expected<std::vector<NodeEvent>> ReadProfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read ORT profile " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseProfile(ss.str());
}

}  // namespace ortgpu
