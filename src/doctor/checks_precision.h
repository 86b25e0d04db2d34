// Precision in `ortgpu doctor` (issue 26): what the GPU's tensor cores
// compute fast, whether float32 runs as TF32 and who decided, and for each
// --model how its nodes split between float16 and float32.
//   driver.precision.<gpu>   the dense tensor-core precisions of each
//                            CUDA-visible GPU's compute capability, and
//                            which of them ortgpu can use today
//   host.tf32                TF32 on, off or absent, and its source: ORT's
//                            use_tf32=1 default, --cuda-option use_tf32,
//                            or NVIDIA_TF32_OVERRIDE (warn when that
//                            silently turns it off)
//   model.<n>.precision      the census (doctor/precision_census.h); for a
//                            float32 model on a GPU with float16 tensor
//                            cores, how to try float16
//   model.<n>.fp32_islands   the biggest float32 islands of a float16 model
//   model.<n>.casts          Cast pairs that cancel and Casts that change
//                            nothing
//   model.<n>.fp16_cpu       float16 compute nodes ORT ran on the CPU (from
//                            the placement of the model's CUDA run)
//
// Pure functions of values read through the driver and Environment seams,
// the census and the placement. Thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/placement.h"
#include "doctor/precision_census.h"
#include "gpu/gpu_info.h"
#include "sys/environment.h"

namespace ortgpu::doctor {

// driver.precision.<index> for each CUDA-visible GPU of `info`.
void CheckGpuPrecision(const gpu::DriverInfo& info, Report& report);

struct Tf32Inputs {
  const Environment& env;
  std::vector<int> device_ccs{};  // CUDA-visible GPUs' compute capabilities (90)
  // The CUDA EP options doctor's sessions use (--cuda-option KEY=VALUE).
  std::map<std::string, std::string> cuda_options{};
};

// Adds host.tf32: none when no GPU is seen, no use_tf32 option is given and
// NVIDIA_TF32_OVERRIDE is unset.
void CheckTf32(const Tf32Inputs& in, Report& report);

struct ModelPrecisionInputs {
  std::string path;
  // Null when the graph could not be read; `census_error` then says why.
  const PrecisionCensus* census = nullptr;
  std::string census_error;
  // Where the model's CUDA run placed each node; null when there was none.
  const PlacementSummary* placement = nullptr;
  // Compute capability of the --device GPU (90); 0 when no GPU is seen.
  int device_cc = 0;
};

// Adds model.<index>.precision and, where they apply, .fp32_islands, .casts
// and .fp16_cpu.
void CheckModelPrecision(const ModelPrecisionInputs& in, int index, Report& report);

}  // namespace ortgpu::doctor
