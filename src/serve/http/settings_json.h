// The JSON bodies of Triton's logging and trace extensions over HTTP
// (GET/POST /v2/logging, /v2/trace/setting, /v2/models/M/trace/setting)
// turned into the RuntimeSettings maps and back. Pure functions; any thread.
//
//   logging: {"log_file": "", "log_info": true, "log_warning": true,
//             "log_error": true, "log_verbose_level": 0, "log_format": "default"}
//   trace:   {"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
//             "log_frequency": "0", "trace_file": "", "trace_mode": "triton"}
//            (trace_level is a list, the others one string; in a POST a
//            value may be a string, a list of strings, or null to clear a
//            model's own value)
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "serve/runtime_settings.h"
#include "status/expected.h"

namespace ortgpu::serve {

nlohmann::json LogSettingsToJson(const LogSettings::Map& settings);
// InvalidArgument for a body that is not a JSON object or a value of a type
// no log setting has.
Expected<LogSettings::Map> LogChangesFromJson(std::string_view body);

nlohmann::json TraceSettingsToJson(const TraceSettings::Map& settings);
Expected<TraceSettings::Map> TraceChangesFromJson(std::string_view body);

}  // namespace ortgpu::serve
