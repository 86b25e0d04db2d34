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
#pragma once

#include <cstdint>
#include <set>
#include <string_view>

#include "status/expected.h"

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

// True when a GPU of compute capability `sm` (e.g. 90) can run code from
// `archs`: an exact cubin, a cubin of the same major and a lower minor
// (binary-compatible within a major), or PTX of an SM not newer than `sm`.
bool CanRunOn(const FatbinArchitectures& archs, int sm);

}  // namespace ortgpu::gpu
