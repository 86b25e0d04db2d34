// A model configuration in the JSON form Triton returns for
// GET /v2/models/M/config (its model_config_utils ModelConfigToJson): proto
// field names, enums by name, every field present with its default (empty
// strings, 0, false, [] and {}), and int64/uint64 values as JSON numbers
// (protobuf's JSON printer writes them as strings, which Triton's clients do
// not expect). Sub-messages that are not set stay absent, as in Triton.
//
// Pure; any thread.
#pragma once

#include <google/protobuf/message.h>
#include <nlohmann/json.hpp>

namespace ortgpu::serve {

nlohmann::json TritonConfigJson(const google::protobuf::Message& config);

}  // namespace ortgpu::serve
