// Layer 4 of `ortgpu doctor`: version compatibility. Given what the other
// layers found (the EP's build, the CUDA runtime and cuDNN that load, the
// driver, the GPUs), checks each pair against the tables in
// gpu/compatibility.h: EP vs CUDA runtime major, EP vs cuDNN major, cuDNN's
// CUDA vs the runtime's, runtime vs driver, GPU architecture vs CUDA and
// driver, and whether the EP carries machine code for each GPU.
//
// The input is plain values so the lead can fill it from any probe and tests
// can state a scenario in a few lines. Pure apart from appending to Report.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "doctor/finding.h"

namespace ortgpu::doctor {

struct CompatInputs {
  std::string ort_version;                   // "1.29.0"
  std::optional<int> cuda_runtime_version;   // cudaRuntimeGetVersion style: 13000; unset = none loaded
  std::optional<int> cudnn_version;          // cudnnGetVersion style: 91900 for 9.19.0
  std::optional<int> cudnn_cuda_major;       // cudnnGetCudartVersion() / 1000: 12 or 13
  std::optional<std::string> driver_version; // "580.159.03"
  std::vector<int> device_ccs;               // 90 for each GPU (CUDA order)
  std::set<int> ep_cubin_archs;              // sm of the EP's cubins: {75, 80, ..., 120}
  std::set<int> ep_ptx_archs;                // PTX targets in the EP's fatbins
  // What the EP was built for, from its ELF NEEDED list (libcudart.so.13,
  // libcudnn.so.9); 0 = unknown: then the ONNX Runtime table is used.
  int ep_cuda_major = 0;
  int ep_cudnn_major = 0;
};

// Adds the compat.* findings. GPU-dependent ones have gpu = true.
void CheckCompatibility(const CompatInputs& in, Report& report);

// 91900 -> "9.19.0"; 8907 (cuDNN 8: major*1000 + minor*100 + patch) -> "8.9.7".
std::string FormatCudnnVersion(int version);

}  // namespace ortgpu::doctor
