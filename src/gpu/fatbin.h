// Fatbin: reads the `.nv_fatbin` section of a CUDA library (the ORT CUDA EP,
// cuDNN, cuBLAS) and says which GPU architectures it carries machine code
// (cubin, an ELF per SM) or PTX for. doctor compares that with the GPU's
// compute capability: a GPU with neither its cubin nor an older PTX to JIT
// cannot run the library's kernels ("no kernel image is available").
//
// Layout (as walked by shared/gpu/fatbin_slim.py): the section is a sequence
// of containers, each a 16-byte header {u32 magic 0xBA55ED50, u16 version,
// u16 header_size, u64 fat_size} followed by fat_size bytes of entries; each
// entry header is {u16 kind (1 PTX, 2 ELF cubin), u16 flags, u32 header_size,
// u64 payload_size, ..., u32 sm_arch at +28} followed by payload_size bytes.
// Bytes between containers that do not start with the magic are skipped 8 at
// a time (containers are 8-aligned). Pure functions, thread-safe.
//
// The section of the ORT 1.29 CUDA EP is 166 MB but has only ~1,900 headers
// (289 containers, 1,591 entries): ParseFatbinFromFile walks them with small
// ranged reads and skips the payloads, instead of reading the section.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "gpu/elf_reader.h"
#include "status/expected.h"
#include "sys/file_system.h"

namespace ortgpu::gpu {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;

struct FatbinArchitectures {
  std::set<int> cubin;  // SM numbers with machine code: 90 means sm_90
  std::set<int> ptx;    // SM numbers with PTX (JIT-compilable for newer GPUs)
  int containers = 0;   // fatbin containers seen
  int entries = 0;      // entries seen across all containers
};

// Parses the bytes of a `.nv_fatbin` section.
// Errors: InvalidArgument when a container or entry runs past the end of the
// section or has an impossible header size (the library is truncated/corrupt).
// An empty section, or one without any container, gives empty sets.
[[nodiscard]] Expected<FatbinArchitectures> ParseFatbin(std::string_view section);

// Returns bytes [offset, offset + size) of a section, or fewer when the
// underlying file ends first. Called with offset + size <= the section size.
using FatbinRangeReader = std::function<Expected<std::string>(uint64_t offset, uint64_t size)>;

// The same walk as ParseFatbin over a `section_size`-byte section whose bytes
// come from `read`, in windows of a few KB around each header; payloads are
// skipped, not read. Gives the same result as ParseFatbin on the same bytes.
// Errors: those of ParseFatbin; `read`'s errors; InvalidArgument when `read`
// returns fewer bytes than asked (the file ends inside the section).
[[nodiscard]] Expected<FatbinArchitectures> ParseFatbin(uint64_t section_size, const FatbinRangeReader& read);

// ParseFatbin over the section at file offset `section_offset`, size
// `section_size`, of `path` (from ElfReader::FindSection(".nv_fatbin")), read
// with FileSystem::ReadRange. Errors name `path`.
[[nodiscard]] Expected<FatbinArchitectures> ParseFatbinFromFile(const FileSystem& fs, const std::string& path,
                                                                uint64_t section_offset, uint64_t section_size);

// ParseFatbin over the `.nv_fatbin` section of `library`, read piecewise with
// ElfReader::ReadFileRange. NotFound when the library has no such section
// (or it is NOBITS): it carries no GPU code of its own.
[[nodiscard]] Expected<FatbinArchitectures> ParseFatbinOfLibrary(const ElfReader& library);

// True when a GPU of compute capability `sm` (e.g. 90) can run code from
// `archs`: an exact cubin, a cubin of the same major and a lower minor
// (binary-compatible within a major), or PTX of an SM not newer than `sm`.
bool CanRunOn(const FatbinArchitectures& archs, int sm);

}  // namespace ortgpu::gpu
