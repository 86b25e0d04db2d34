// Environment traps (issue #13): settings that let the CUDA EP load and run,
// but wrongly, slowly or with other numbers than expected.
//   host.driver_capabilities   NVIDIA_DRIVER_CAPABILITIES without compute or
//                              utility in a container
//   host.cuda_module_loading   CUDA_MODULE_LOADING (LAZY recommended)
//   host.ld_preload            a CUDA library in LD_PRELOAD or /etc/ld.so.preload
//   libraries.jit_cache        an unwritable or disabled CUDA JIT cache when
//                              the EP has only PTX for the GPU
//   libraries.conda_pip        a conda environment and pip wheels both
//                              providing CUDA libraries: which one wins
// (host.tf32, NVIDIA_TF32_OVERRIDE against ORT's use_tf32, is in
// doctor/checks_precision.h.)
//
// A pure function of values read through the Environment and FileSystem
// seams and the earlier layers' facts. Thread-safe.
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "doctor/finding.h"
#include "gpu/library_probe.h"
#include "sys/environment.h"
#include "sys/file_system.h"

namespace ortgpu::doctor {

struct EnvironmentCheckInputs {
  const Environment& env;
  const FileSystem& fs;
  bool in_container = false;
  bool driver_loaded = false;         // libcuda loaded (driver layer)
  std::vector<int> device_ccs{};      // CUDA-visible GPUs' compute capabilities (90)
  std::set<int> ep_cubin_archs{};     // the EP's machine code (gpu/fatbin.h)
  std::set<int> ep_ptx_archs{};
  std::optional<int> cudart_version{};  // the loaded CUDA runtime (13000)
  int ep_cuda_major = 0;              // the CUDA major the EP was built for
  std::vector<gpu::LibraryReport> libraries{};  // layer 3's probe
};

void CheckEnvironment(const EnvironmentCheckInputs& in, Report& report);

// The folder the CUDA driver keeps its JIT cache in: CUDA_CACHE_PATH, else
// $HOME/.nv/ComputeCache; "" when neither is known.
std::string CudaJitCacheFolder(const Environment& env);

}  // namespace ortgpu::doctor
