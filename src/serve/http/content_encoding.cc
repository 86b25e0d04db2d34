#include "serve/http/content_encoding.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace ortgpu::serve {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// windowBits: 15 + 16 gzip, 15 zlib, -15 raw deflate.
Expected<std::string> Inflate(std::string_view body, int window_bits, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return Internal("zlib inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  std::string out;
  char buf[64 * 1024];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return InvalidArgument(fmt::format("the request body is not valid compressed data ({})",
                                         z.msg != nullptr ? z.msg : "truncated"));
    }
    const size_t produced = sizeof buf - z.avail_out;
    if (out.size() + produced > max_bytes) {
      inflateEnd(&z);
      return ResourceExhausted(fmt::format("the request body inflates past the limit of {} bytes "
                                           "({} compressed bytes sent); send a smaller batch or raise "
                                           "--max-body-bytes",
                                           max_bytes, body.size()));
    }
    out.append(buf, produced);
    if (rc == Z_OK && z.avail_in == 0 && produced == 0) {
      inflateEnd(&z);
      return InvalidArgument("the request body ends inside its compressed data");
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace

std::string_view ContentCodingName(ContentCoding c) {
  switch (c) {
    case ContentCoding::kGzip: return "gzip";
    case ContentCoding::kDeflate: return "deflate";
    default: return "identity";
  }
}

Expected<ContentCoding> ParseContentEncoding(std::string_view header) {
  const std::string v = Lower(Trim(header));
  if (v.empty() || v == "identity") return ContentCoding::kIdentity;
  if (v == "gzip" || v == "x-gzip") return ContentCoding::kGzip;
  if (v == "deflate") return ContentCoding::kDeflate;
  return Unimplemented(fmt::format("Content-Encoding '{}' is not supported; send the body uncompressed, gzip or "
                                   "deflate",
                                   std::string(header)));
}

std::optional<ContentCoding> ChooseResponseCoding(std::string_view accept_encoding) {
  bool gzip = false;
  bool deflate = false;
  std::string_view rest = accept_encoding;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    std::string_view params;
    if (const size_t semi = item.find(';'); semi != std::string_view::npos) {
      params = Trim(item.substr(semi + 1));
      item = Trim(item.substr(0, semi));
    }
    const std::string p = Lower(params);
    const bool refused = p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000";
    const std::string name = Lower(item);
    if (name == "gzip" && !refused) gzip = true;
    if (name == "deflate" && !refused) deflate = true;
  }
  if (gzip) return ContentCoding::kGzip;
  if (deflate) return ContentCoding::kDeflate;
  return std::nullopt;
}

Expected<std::string> Decompress(std::string_view body, ContentCoding coding, size_t max_bytes) {
  if (coding == ContentCoding::kIdentity) return std::string(body);
  if (coding == ContentCoding::kGzip) return Inflate(body, 15 + 16, max_bytes);
  auto zlib = Inflate(body, 15, max_bytes);
  if (zlib.ok() || zlib.status().code() == Code::kResourceExhausted) return zlib;
  return Inflate(body, -15, max_bytes);  // raw deflate, as some clients send
}

Expected<std::string> Compress(std::string_view body, ContentCoding coding) {
  if (coding == ContentCoding::kIdentity) return std::string(body);
  z_stream z{};
  const int window_bits = coding == ContentCoding::kGzip ? 15 + 16 : 15;
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Internal("zlib deflateInit2 failed");
  }
  std::string out(deflateBound(&z, static_cast<uLong>(body.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return Internal("zlib could not compress the response");
  out.resize(z.total_out);
  return out;
}

}  // namespace ortgpu::serve
