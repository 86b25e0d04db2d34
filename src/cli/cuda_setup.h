// Process start-up shared by the commands: finding and preloading the CUDA
// libraries (once per process), and the --version text.
#pragma once

#include <string>
#include <vector>

#include "gpu/preload.h"

namespace ortgpu::cli {

// Runs gpu::PreloadCudaLibraries with the real machine once; later calls
// return the first call's results.
const std::vector<gpu::PreloadResult>& PreloadCudaLibrariesOnce();

// What the CUDA driver says about this machine: the GPU names, or why none
// can be used (no libcuda, cuInit failed, no device). serve picks its default
// instance kind from it, perf its --compare-in-process provider.
struct GpuProbe {
  std::vector<std::string> names;
  std::string why_none;
};
GpuProbe ProbeGpus();

// ortgpu's and ORT's versions, and the driver, CUDA runtime and cuDNN
// versions (with paths) when found; one per line.
std::string VersionText();

}  // namespace ortgpu::cli
