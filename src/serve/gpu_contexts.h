// No stray context in serve (issue #30 item 2): after the models load, the
// GPUs where this process holds memory though no READY model has an
// instance there. Every thread that drives an instance makes its GPU
// current first (docs/ARCHITECTURE.md, "several GPUs"), so there should be
// none; a library that touches CUDA on a thread that did not (ORT #13697)
// would leave a context on GPU 0. Read through the Nvml seam; pure
// otherwise. Used by serve's command once at start-up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/nvml.h"
#include "serve/repository/instance_placement.h"
#include "serve/server.h"
#include "sys/environment.h"

namespace ortgpu::serve {

// One line per GPU (NVML's numbering) that lists process `pid` while no
// model of `models` has a GPU instance there (or tried one: a GPU its load
// left out): what it holds and how to keep the process off it. Empty when
// there is none, or when nothing can be told: a model is not READY (its
// failed load may have made a context anywhere), no NVML, or `pid` listed
// nowhere (a container's pid namespace), or a model's GPU that NVML does not
// list. CUDA ordinals are matched to NVML's GPUs by UUID (`visible`; a MIG
// instance to its GPU), else by CUDA_VISIBLE_DEVICES, indices or UUIDs
// (NvmlPlaceOf).
std::vector<std::string> StrayContexts(gpu::Nvml& nvml, const std::vector<ModelSummary>& models,
                                       const VisibleGpus* visible, uint32_t pid,
                                       const Environment& env = RealEnvironment());

}  // namespace ortgpu::serve
