#include "serve/protocol/base64.h"

#include <array>

#include <fmt/format.h>

namespace ortgpu::serve::protocol {
namespace {

constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// 0-63 for a letter of the alphabet, -1 otherwise.
constexpr std::array<int8_t, 256> DecodeTable() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (size_t i = 0; i < kAlphabet.size(); ++i) t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr auto kDecode = DecodeTable();

}  // namespace

Expected<std::string> DecodeBase64(std::string_view text) {
  size_t end = text.size();
  // Up to two '=' close the text; none may appear elsewhere.
  for (int pad = 0; pad < 2 && end > 0 && text[end - 1] == '='; ++pad) --end;
  if (end != text.size() && text.size() % 4 != 0) {
    return InvalidArgument(fmt::format("base64 of {} characters is padded with '=' but is not a multiple of 4 long",
                                       text.size()));
  }
  std::string out;
  out.reserve(end / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < end; ++i) {
    const int8_t v = kDecode[static_cast<unsigned char>(text[i])];
    if (v < 0) {
      return InvalidArgument(fmt::format("character {} of the base64 text is not base64 (byte 0x{:02x}); send the "
                                         "bytes in standard base64 (A-Z a-z 0-9 + /) without line breaks",
                                         i, static_cast<unsigned char>(text[i])));
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (end % 4 == 1) {
    return InvalidArgument(fmt::format("base64 text of {} characters ends in a group of one character, which "
                                       "encodes no byte; it was cut short",
                                       end));
  }
  return out;
}

std::string EncodeBase64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out.push_back(kAlphabet[(n >> s) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace ortgpu::serve::protocol
