#include "gpu/fatbin.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace ortgpu::gpu {
namespace {

constexpr uint64_t kContainerHeaderSize = 16;
constexpr uint64_t kMinEntryHeaderSize = 32;  // up to and including sm_arch at +28
constexpr uint16_t kKindPtx = 1;
constexpr uint16_t kKindCubin = 2;
// Bytes fetched per ranged read: an entry header (64 or 112 bytes) and, for
// the small entries, the next few headers too.
constexpr uint64_t kWindowSize = 4096;

// The section's bytes, either all in memory or fetched through a
// FatbinRangeReader one window at a time.
class FatbinBytes {
 public:
  explicit FatbinBytes(std::string_view all) : size_(all.size()), window_(all) {}
  FatbinBytes(uint64_t size, const FatbinRangeReader* read) : size_(size), read_(read) {}

  uint64_t size() const { return size_; }

  // Loads a T at `off`. REQUIRES: off + sizeof(T) <= size().
  template <typename T>
  Expected<T> Load(uint64_t off) {
    if (off < window_offset_ || off + sizeof(T) > window_offset_ + window_.size()) {
      ORTGPU_RETURN_IF_ERROR(Refill(off, sizeof(T)));
    }
    T v{};
    std::memcpy(&v, window_.data() + (off - window_offset_), sizeof(T));  // little-endian host
    return v;
  }

 private:
  Status Refill(uint64_t off, uint64_t need) {
    if (read_ == nullptr) return Internal("fatbin: read outside the in-memory section");  // unreachable
    const uint64_t want = std::min(std::max(need, kWindowSize), size_ - off);
    auto bytes = (*read_)(off, want);
    if (!bytes.ok()) return bytes.status();
    if (bytes->size() < need) {
      return InvalidArgument("corrupt .nv_fatbin section: the file ends at section offset " +
                             std::to_string(off + bytes->size()) + " of " + std::to_string(size_) +
                             "; the CUDA library is probably truncated (reinstall it)");
    }
    storage_ = std::move(bytes).value();
    window_ = storage_;
    window_offset_ = off;
    return Status::Ok();
  }

  uint64_t size_ = 0;
  const FatbinRangeReader* read_ = nullptr;
  std::string storage_;
  std::string_view window_;  // bytes [window_offset_, window_offset_ + window_.size())
  uint64_t window_offset_ = 0;
};

Expected<FatbinArchitectures> Walk(FatbinBytes& section) {
  FatbinArchitectures out;
  const uint64_t end = section.size();
  uint64_t p = 0;
  const auto bad = [](const std::string& why, uint64_t at) {
    return InvalidArgument("corrupt .nv_fatbin section: " + why + " at offset " + std::to_string(at) +
                           "; the CUDA library is probably truncated (reinstall it)");
  };
  while (p + kContainerHeaderSize <= end) {
    ORTGPU_ASSIGN_OR_RETURN(const uint32_t magic, section.Load<uint32_t>(p));
    if (magic != kFatbinMagic) {
      p += 8;
      continue;
    }
    ORTGPU_ASSIGN_OR_RETURN(const uint16_t header_size, section.Load<uint16_t>(p + 6));
    ORTGPU_ASSIGN_OR_RETURN(const uint64_t fat_size, section.Load<uint64_t>(p + 8));
    if (header_size < kContainerHeaderSize) return bad("container header size " + std::to_string(header_size), p);
    if (header_size > end - p || fat_size > end - p - header_size) {
      return bad("container runs past the end of the section", p);
    }
    ++out.containers;
    uint64_t q = p + header_size;
    const uint64_t cend = q + fat_size;
    while (q + kMinEntryHeaderSize <= cend) {
      ORTGPU_ASSIGN_OR_RETURN(const uint16_t kind, section.Load<uint16_t>(q));
      ORTGPU_ASSIGN_OR_RETURN(const uint32_t entry_header, section.Load<uint32_t>(q + 4));
      ORTGPU_ASSIGN_OR_RETURN(const uint64_t payload, section.Load<uint64_t>(q + 8));
      if (entry_header == 0) break;  // padding at the end of a container
      if (entry_header < kMinEntryHeaderSize || entry_header > cend - q ||
          payload > cend - q - entry_header) {
        return bad("entry runs past the end of its container", q);
      }
      ORTGPU_ASSIGN_OR_RETURN(const uint32_t arch, section.Load<uint32_t>(q + 28));
      ++out.entries;
      if (kind == kKindCubin) out.cubin.insert(static_cast<int>(arch));
      if (kind == kKindPtx) out.ptx.insert(static_cast<int>(arch));
      q += entry_header + payload;
    }
    // The next container normally starts right here; when it does not, scan
    // on from the next 8-byte boundary (containers are 8-aligned).
    p = cend;
    if (p + 4 <= end) {
      ORTGPU_ASSIGN_OR_RETURN(const uint32_t next, section.Load<uint32_t>(p));
      if (next != kFatbinMagic) p = (p + 7) & ~uint64_t{7};
    }
  }
  return out;
}

}  // namespace

Expected<FatbinArchitectures> ParseFatbin(std::string_view section) {
  FatbinBytes bytes(section);
  return Walk(bytes);
}

Expected<FatbinArchitectures> ParseFatbin(uint64_t section_size, const FatbinRangeReader& read) {
  FatbinBytes bytes(section_size, &read);
  return Walk(bytes);
}

Expected<FatbinArchitectures> ParseFatbinFromFile(const FileSystem& fs, const std::string& path,
                                                  uint64_t section_offset, uint64_t section_size) {
  const FatbinRangeReader read = [&](uint64_t offset, uint64_t size) -> Expected<std::string> {
    auto bytes = fs.ReadRange(path, section_offset + offset, size);
    if (!bytes.ok() && bytes.status().code() == Code::kInvalidArgument) return std::string();  // ends earlier
    return bytes;
  };
  auto archs = ParseFatbin(section_size, read);
  if (!archs.ok()) return archs.status().WithContext(path);
  return archs;
}

Expected<FatbinArchitectures> ParseFatbinOfLibrary(const ElfReader& library) {
  constexpr uint32_t kShtNobits = 8;
  const ElfSection* section = library.FindSection(".nv_fatbin");
  if (section == nullptr || section->type == kShtNobits) {
    return NotFound(library.origin() + " has no .nv_fatbin section (no GPU code of its own)");
  }
  const uint64_t base = section->offset;
  const FatbinRangeReader read = [&](uint64_t offset, uint64_t size) {
    return library.ReadFileRange(base + offset, size);
  };
  auto archs = ParseFatbin(section->size, read);
  if (!archs.ok()) return archs.status().WithContext(library.origin());
  return archs;
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
