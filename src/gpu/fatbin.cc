#include "gpu/fatbin.h"

#include <cstring>
#include <string>

namespace ortgpu::gpu {
namespace {

constexpr uint64_t kContainerHeaderSize = 16;
constexpr uint64_t kMinEntryHeaderSize = 32;  // up to and including sm_arch at +28
constexpr uint16_t kKindPtx = 1;
constexpr uint16_t kKindCubin = 2;

template <typename T>
T Load(std::string_view s, uint64_t off) {
  T v{};
  std::memcpy(&v, s.data() + off, sizeof(T));  // caller checked bounds; little-endian host
  return v;
}

}  // namespace

Expected<FatbinArchitectures> ParseFatbin(std::string_view section) {
  FatbinArchitectures out;
  const uint64_t end = section.size();
  uint64_t p = 0;
  const auto bad = [](const std::string& why, uint64_t at) {
    return InvalidArgument("corrupt .nv_fatbin section: " + why + " at offset " + std::to_string(at) +
                           "; the CUDA library is probably truncated (reinstall it)");
  };
  while (p + kContainerHeaderSize <= end) {
    if (Load<uint32_t>(section, p) != kFatbinMagic) {
      p += 8;
      continue;
    }
    const uint16_t header_size = Load<uint16_t>(section, p + 6);
    const uint64_t fat_size = Load<uint64_t>(section, p + 8);
    if (header_size < kContainerHeaderSize) return bad("container header size " + std::to_string(header_size), p);
    if (header_size > end - p || fat_size > end - p - header_size) {
      return bad("container runs past the end of the section", p);
    }
    ++out.containers;
    uint64_t q = p + header_size;
    const uint64_t cend = q + fat_size;
    while (q + kMinEntryHeaderSize <= cend) {
      const uint16_t kind = Load<uint16_t>(section, q);
      const uint32_t entry_header = Load<uint32_t>(section, q + 4);
      const uint64_t payload = Load<uint64_t>(section, q + 8);
      if (entry_header == 0) break;  // padding at the end of a container
      if (entry_header < kMinEntryHeaderSize || entry_header > cend - q ||
          payload > cend - q - entry_header) {
        return bad("entry runs past the end of its container", q);
      }
      const int arch = static_cast<int>(Load<uint32_t>(section, q + 28));
      ++out.entries;
      if (kind == kKindCubin) out.cubin.insert(arch);
      if (kind == kKindPtx) out.ptx.insert(arch);
      q += entry_header + payload;
    }
    // The next container normally starts right here; when it does not, scan
    // on from the next 8-byte boundary (containers are 8-aligned).
    p = cend;
    if (p + 4 <= end && Load<uint32_t>(section, p) != kFatbinMagic) p = (p + 7) & ~uint64_t{7};
  }
  return out;
}

bool CanRunOn(const FatbinArchitectures& archs, int sm) {
  for (int a : archs.cubin) {
    if (a == sm || (a / 10 == sm / 10 && a < sm)) return true;
  }
  for (int a : archs.ptx) {
    if (a <= sm) return true;
  }
  return false;
}

}  // namespace ortgpu::gpu
