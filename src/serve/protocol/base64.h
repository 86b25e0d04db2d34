// Base64 (RFC 4648, standard alphabet, '=' padding) as Triton's HTTP
// protocol carries bytes inside JSON: CUDA IPC handles ({"b64": "..."}) and
// model files. Pure functions.
#pragma once

#include <string>
#include <string_view>

#include "status/expected.h"

namespace ortgpu::serve::protocol {

// InvalidArgument naming the first bad character or a length that is not a
// multiple of 4. Whitespace is not accepted.
Expected<std::string> DecodeBase64(std::string_view text);
std::string EncodeBase64(std::string_view bytes);

}  // namespace ortgpu::serve::protocol
