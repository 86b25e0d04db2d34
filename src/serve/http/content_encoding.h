// HTTP content codings for infer bodies (Triton's compressed requests and
// responses): Content-Encoding gzip or deflate on a request is decompressed
// with zlib, the body limit applying to the decompressed size; a response
// is compressed when Accept-Encoding asks for gzip or deflate. "deflate" is
// read as zlib data (RFC 9110) or, failing that, raw deflate, as clients
// send both. Pure functions; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "status/expected.h"

namespace ortgpu::serve {

enum class ContentCoding { kIdentity, kGzip, kDeflate };
std::string_view ContentCodingName(ContentCoding c);  // "identity", "gzip", "deflate"

// The Content-Encoding header value ("" is identity). Unimplemented naming
// the value for any other coding.
Expected<ContentCoding> ParseContentEncoding(std::string_view header);

// The coding to answer with for an Accept-Encoding header: gzip, else
// deflate, when listed without q=0; nullopt otherwise.
std::optional<ContentCoding> ChooseResponseCoding(std::string_view accept_encoding);

// Decompresses `body`. ResourceExhausted when it would exceed `max_bytes`;
// InvalidArgument when the data is not valid for the coding.
Expected<std::string> Decompress(std::string_view body, ContentCoding coding, size_t max_bytes);
// Compresses `body` (zlib's default level).
Expected<std::string> Compress(std::string_view body, ContentCoding coding);

}  // namespace ortgpu::serve
