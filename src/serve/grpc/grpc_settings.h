// The TraceSetting and LogSettings RPCs' messages turned into the
// RuntimeSettings maps and back. Pure functions; any thread.
#pragma once

#include "grpc_service.pb.h"
#include "serve/runtime_settings.h"
#include "status/expected.h"

namespace ortgpu::serve {

TraceSettings::Map TraceChangesFromGrpc(const inference::TraceSettingRequest& request);
void TraceSettingsToGrpc(const TraceSettings::Map& settings, inference::TraceSettingResponse& out);

// InvalidArgument naming the setting when one carries no value.
Expected<LogSettings::Map> LogChangesFromGrpc(const inference::LogSettingsRequest& request);
void LogSettingsToGrpc(const LogSettings::Map& settings, inference::LogSettingsResponse& out);

}  // namespace ortgpu::serve
