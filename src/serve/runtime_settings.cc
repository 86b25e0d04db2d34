#include "serve/runtime_settings.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace ortgpu::serve {
namespace {

bool IsBool(const LogSettings::Value& v) { return std::holds_alternative<bool>(v); }

void ApplyLevel(const LogSettings::Map& m) {
  const uint32_t verbose = std::get<uint32_t>(m.at("log_verbose_level"));
  spdlog::level::level_enum level = spdlog::level::off;
  if (verbose >= 2) {
    level = spdlog::level::trace;
  } else if (verbose == 1) {
    level = spdlog::level::debug;
  } else if (std::get<bool>(m.at("log_info"))) {
    level = spdlog::level::info;
  } else if (std::get<bool>(m.at("log_warning"))) {
    level = spdlog::level::warn;
  } else if (std::get<bool>(m.at("log_error"))) {
    level = spdlog::level::err;
  }
  spdlog::set_level(level);
}

}  // namespace

LogSettings::LogSettings() {
  const auto level = spdlog::get_level();
  values_ = {{"log_file", std::string()},
             {"log_info", level <= spdlog::level::info},
             {"log_warning", level <= spdlog::level::warn},
             {"log_error", level <= spdlog::level::err},
             {"log_verbose_level", uint32_t{level <= spdlog::level::trace ? 2u : level <= spdlog::level::debug ? 1u : 0u}},
             {"log_format", std::string("default")}};
}

LogSettings::Map LogSettings::Get() const {
  MutexLock lock(&mu_);
  return values_;
}

Status LogSettings::Update(const Map& changes) {
  MutexLock lock(&mu_);
  Map next = values_;
  for (const auto& [key, value] : changes) {
    auto it = next.find(key);
    if (it == next.end()) {
      return InvalidArgument(fmt::format("unknown log setting '{}'; the settings are log_file, log_info, log_warning, "
                                         "log_error, log_verbose_level and log_format",
                                         key));
    }
    if (key == "log_info" || key == "log_warning" || key == "log_error") {
      if (!IsBool(value)) return InvalidArgument(fmt::format("log setting '{}' must be a boolean", key));
    } else if (key == "log_verbose_level") {
      if (!std::holds_alternative<uint32_t>(value)) {
        return InvalidArgument("log setting 'log_verbose_level' must be a non-negative integer");
      }
    } else {
      if (!std::holds_alternative<std::string>(value)) {
        return InvalidArgument(fmt::format("log setting '{}' must be a string", key));
      }
      const auto& s = std::get<std::string>(value);
      if (key == "log_file" && !s.empty()) {
        return InvalidArgument("log_file: ortgpu serve logs to stderr only; redirect its stderr to write a file");
      }
      if (key == "log_format" && s != "default" && s != "ISO8601") {
        return InvalidArgument(fmt::format("log_format '{}' is not one of: default, ISO8601", s));
      }
    }
    it->second = value;
  }
  values_ = std::move(next);
  ApplyLevel(values_);
  return Status::Ok();
}

TraceSettings::TraceSettings() {
  global_ = {{"trace_file", {""}},   {"trace_level", {"OFF"}}, {"trace_rate", {"1000"}},
             {"trace_count", {"-1"}}, {"log_frequency", {"0"}}, {"trace_mode", {"triton"}}};
}

TraceSettings::Map TraceSettings::Get(const std::string& model) const {
  MutexLock lock(&mu_);
  Map out = global_;
  if (auto it = models_.find(model); !model.empty() && it != models_.end()) {
    for (const auto& [key, values] : it->second) out[key] = values;
  }
  return out;
}

Status TraceSettings::Update(const std::string& model, const Map& changes) {
  MutexLock lock(&mu_);
  for (const auto& [key, values] : changes) {
    if (global_.find(key) == global_.end()) {
      return InvalidArgument(fmt::format("unknown trace setting '{}'; the settings are trace_file, trace_level, "
                                         "trace_rate, trace_count, log_frequency and trace_mode",
                                         key));
    }
    if (key == "trace_level") {
      for (const auto& v : values) {
        if (v != "OFF") {
          return Unimplemented(fmt::format("trace_level '{}': ortgpu serve records no traces; use the statistics "
                                           "endpoint and the Prometheus metrics for timings",
                                           v));
        }
      }
    }
  }
  Map& target = model.empty() ? global_ : models_[model];
  for (const auto& [key, values] : changes) {
    if (values.empty()) {
      if (model.empty()) continue;  // the global value stays: there is nothing under it
      target.erase(key);
    } else {
      target[key] = values;
    }
  }
  return Status::Ok();
}

}  // namespace ortgpu::serve
