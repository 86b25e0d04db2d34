#include "serve/grpc/grpc_settings.h"

#include <fmt/format.h>

namespace ortgpu::serve {

TraceSettings::Map TraceChangesFromGrpc(const inference::TraceSettingRequest& request) {
  TraceSettings::Map out;
  for (const auto& [key, value] : request.settings()) out[key].assign(value.value().begin(), value.value().end());
  return out;
}

void TraceSettingsToGrpc(const TraceSettings::Map& settings, inference::TraceSettingResponse& out) {
  for (const auto& [key, values] : settings) {
    auto& v = (*out.mutable_settings())[key];
    for (const auto& s : values) v.add_value(s);
  }
}

Expected<LogSettings::Map> LogChangesFromGrpc(const inference::LogSettingsRequest& request) {
  using Setting = inference::LogSettingsRequest::SettingValue;
  LogSettings::Map out;
  for (const auto& [key, value] : request.settings()) {
    switch (value.parameter_choice_case()) {
      case Setting::kBoolParam: out[key] = value.bool_param(); break;
      case Setting::kUint32Param: out[key] = value.uint32_param(); break;
      case Setting::kStringParam: out[key] = value.string_param(); break;
      default: return InvalidArgument(fmt::format("log setting '{}' has no value", key));
    }
  }
  return out;
}

void LogSettingsToGrpc(const LogSettings::Map& settings, inference::LogSettingsResponse& out) {
  for (const auto& [key, value] : settings) {
    auto& v = (*out.mutable_settings())[key];
    if (const bool* b = std::get_if<bool>(&value)) {
      v.set_bool_param(*b);
    } else if (const uint32_t* n = std::get_if<uint32_t>(&value)) {
      v.set_uint32_param(*n);
    } else {
      v.set_string_param(std::get<std::string>(value));
    }
  }
}

}  // namespace ortgpu::serve
