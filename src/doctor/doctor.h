// RunDoctor: `ortgpu doctor` as a library call. Runs the seven layers in the
// order real deployments fail, each on the ground the previous ones laid: a
// layer whose ground failed reports `skip` with the reason. Layer 2b (GPU
// health, the host-device copy test) is observed after the driver layer and
// judged after the end-to-end run, whose CUDA runs it samples.
//
// Everything outside the process comes through DoctorSeams, so tests can
// describe any machine with fakes; the CLI passes the real ones. Not
// thread-safe: one RunDoctor at a time per seams object.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "doctor/checks_host.h"
#include "doctor/finding.h"
#include "doctor/observe.h"
#include "gpu/cuda_driver.h"
#include "gpu/dynamic_loader.h"
#include "gpu/library_search.h"
#include "gpu/nvml.h"
#include "gpu/preload.h"
#include "sys/environment.h"
#include "sys/file_system.h"

namespace ortgpu::doctor {

struct DoctorOptions {
  // --require gpu: every GPU failure or skip makes the exit code 1.
  bool require_gpu = false;
  // --model PATH (repeatable): layer 7 on each.
  std::vector<std::string> models;
  // Run layers 5-7 through the real ONNX Runtime (tests of layers 1-4 turn
  // this off).
  bool run_onnxruntime = true;
  ObserveOptions observe;
  // Layer 2b's host-device copy test (checks_health.h): 64 MiB x 3 per
  // direction and memory kind, ~50-100 ms with the context creation. Off:
  // health.copy is a skip.
  bool copy_test = true;
  gpu::CopyTestOptions copy;
};

struct DoctorSeams {
  const FileSystem* fs = nullptr;
  const Environment* env = nullptr;
  gpu::GpuDriver* driver = nullptr;
  gpu::Nvml* nvml = nullptr;
  gpu::DynamicLoader* loader = nullptr;   // null: versions are read from files only
  const gpu::LibrarySearch* search = nullptr;
  HostFacts host;
  // What ortgpu preloaded at start (gpu/preload.h).
  std::vector<gpu::PreloadResult> preload;
  // The version the loaded libonnxruntime reports (Runtime::Version(), ORT's
  // GetVersionString), "1.29.0": layer 4 reads the EP builds ORT publishes
  // for it. The CLI asks ORT; tests describe any version.
  // REQUIRES: non-empty.
  std::string ort_version;
  // libonnxruntime_providers_cuda.so; "" to look next to libonnxruntime.
  std::string ep_library_path;
  // This process as NVML lists it (0: getpid()).
  uint32_t pid = 0;
};

Report RunDoctor(const DoctorOptions& options, DoctorSeams& seams);

}  // namespace ortgpu::doctor
