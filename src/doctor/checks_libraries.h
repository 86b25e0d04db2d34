// doctor layer 3: the CUDA libraries the CUDA execution provider needs, from
// the library probe (gpu/library_probe.h) and what ortgpu preloaded at start
// (gpu/preload.h): for each, the file the process uses, its version asked
// from the library, other copies with their versions, missing symbols, and
// the exact fix when it is missing. Pure function over values; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "gpu/library_probe.h"
#include "gpu/preload.h"

namespace ortgpu::doctor {

struct LibraryCheckInputs {
  std::vector<gpu::LibraryReport> libraries;
  std::vector<gpu::PreloadResult> preload;
  bool gpu_usable = false;   // from the driver layer: missing libraries are failures only then
  std::string ep_path;       // libonnxruntime_providers_cuda.so
  std::vector<std::string> ep_needed;  // its ELF NEEDED list
  std::string ep_error;      // why its ELF could not be read
};

struct LibraryFacts {
  std::optional<int> cudart_version;    // 13000
  std::optional<int> cudnn_version;     // 91900
  std::optional<int> cudnn_cuda_major;  // 13
  std::string first_missing;            // soname of the first library the EP cannot do without
};

LibraryFacts CheckLibraries(const LibraryCheckInputs& in, Report& report);

// "13.0" -> 13000, "9.19.0" -> 91900 (cuDNN), "" -> nullopt.
std::optional<int> CudaVersionNumber(const std::string& text);
std::optional<int> CudnnVersionNumber(const std::string& text);

}  // namespace ortgpu::doctor
