#include "serve/http/settings_json.h"

#include <fmt/format.h>

namespace ortgpu::serve {
namespace {

Expected<nlohmann::json> ParseObject(std::string_view body, std::string_view what) {
  auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(fmt::format("the {} body must be a JSON object of settings, such as {}", what,
                                       what == "logging" ? R"({"log_verbose_level": 1})" : R"({"trace_rate": "100"})"));
  }
  return j;
}

}  // namespace

nlohmann::json LogSettingsToJson(const LogSettings::Map& settings) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : settings) {
    std::visit([&j, &key = key](const auto& v) { j[key] = v; }, value);
  }
  return j;
}

Expected<LogSettings::Map> LogChangesFromJson(std::string_view body) {
  LogSettings::Map out;
  if (body.empty()) return out;
  ORTGPU_ASSIGN_OR_RETURN(nlohmann::json j, ParseObject(body, "logging"));
  for (const auto& [key, value] : j.items()) {
    if (value.is_boolean()) {
      out[key] = value.get<bool>();
    } else if (value.is_number_unsigned()) {
      out[key] = static_cast<uint32_t>(value.get<uint64_t>());
    } else if (value.is_string()) {
      out[key] = value.get<std::string>();
    } else {
      return InvalidArgument(fmt::format("log setting '{}' must be a boolean, a non-negative integer or a string, "
                                         "not {}",
                                         key, value.dump()));
    }
  }
  return out;
}

nlohmann::json TraceSettingsToJson(const TraceSettings::Map& settings) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, values] : settings) {
    if (key == "trace_level") {
      j[key] = values;
    } else {
      j[key] = values.empty() ? std::string() : values.front();
    }
  }
  return j;
}

Expected<TraceSettings::Map> TraceChangesFromJson(std::string_view body) {
  TraceSettings::Map out;
  if (body.empty()) return out;
  ORTGPU_ASSIGN_OR_RETURN(nlohmann::json j, ParseObject(body, "trace setting"));
  for (const auto& [key, value] : j.items()) {
    auto& values = out[key];
    if (value.is_null()) continue;  // clears the model's own value
    if (value.is_string()) {
      values.push_back(value.get<std::string>());
    } else if (value.is_number_integer()) {
      values.push_back(value.dump());
    } else if (value.is_array()) {
      for (const auto& v : value) {
        if (!v.is_string()) return InvalidArgument(fmt::format("trace setting '{}' must list strings", key));
        values.push_back(v.get<std::string>());
      }
    } else {
      return InvalidArgument(fmt::format("trace setting '{}' must be a string, a list of strings or null", key));
    }
  }
  return out;
}

}  // namespace ortgpu::serve
