// Base64 (RFC 4648, the standard alphabet) as KServe's JSON carries bytes:
// Triton's load parameters "file:<version>/<name>" send a model file's
// bytes this way over HTTP.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "status/expected.h"

namespace ortgpu::serve::protocol {

// The bytes `text` encodes. Padding ('=') may be left out; anything else
// outside the alphabet (whitespace included), a stray '=' or a final
// group of one character is InvalidArgument naming the offset.
Expected<std::string> DecodeBase64(std::string_view text);

// The standard encoding, with padding.
std::string EncodeBase64(std::string_view bytes);

}  // namespace ortgpu::serve::protocol
