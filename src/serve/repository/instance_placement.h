// Instance placement: which device each instance of a model runs on, read
// from config.pbtxt's instance_group as Triton reads it:
//
//   instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0, 1 ] } ]
//     -> 2 instances on GPU 0 and 2 on GPU 1 (`count` per listed GPU);
//   instance_group [ { count: 2 kind: KIND_GPU } ]
//     -> 2 instances on every visible GPU;
//   no instance_group
//     -> one instance on every visible GPU (the default kind GPU), or one
//        CPU instance (the default kind CPU: --cpu, no usable GPU).
//
// GPUs are CUDA ordinals as the process sees them: after
// CUDA_VISIBLE_DEVICES, so `gpus: [0]` under CUDA_VISIBLE_DEVICES=3 is the
// host's GPU 3. A listed GPU that does not exist is a config error: the
// model is UNAVAILABLE, and the message names the GPU, how many are visible
// and CUDA_VISIBLE_DEVICES.
//
// Pure functions over values; thread-safe. ProbeVisibleGpus is the only one
// that reaches the outside world, through the GpuDriver and Environment seams.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpu/cuda_driver.h"
#include "model_config.pb.h"
#include "status/expected.h"
#include "sys/environment.h"

namespace ortgpu::serve {

enum class InstanceKind { kGpu, kCpu };

// One instance of a model, where it runs.
struct InstanceSpec {
  InstanceKind kind = InstanceKind::kGpu;
  int gpu = 0;  // CUDA ordinal for kGpu; 0 for kCpu
  // "instance 3 (GPU 1)", "instance 0 (CPU)": how messages name it.
  std::string Describe(size_t index) const;
};

// The GPUs this process can use, in CUDA ordinal order.
struct VisibleGpus {
  // uuids[i] is CUDA device i's UUID ("GPU-5f1c..."; "" when the driver
  // did not say); its size is the number of visible GPUs.
  std::vector<std::string> uuids;
  // names[i] is device i's name ("NVIDIA H200"); same size as uuids.
  std::vector<std::string> names;
  // CUDA_VISIBLE_DEVICES as the process got it; nullopt when unset.
  std::optional<std::string> cuda_visible_devices;

  int count() const { return static_cast<int>(uuids.size()); }
  // The UUID of ordinal `gpu`, "" when unknown.
  std::string Uuid(int gpu) const;
  // "1 GPU is visible (CUDA_VISIBLE_DEVICES=0)", "2 GPUs are visible
  // (CUDA_VISIBLE_DEVICES unset)".
  std::string DescribeCount() const;
};

// What the CUDA driver sees (cuDeviceGetCount, each device's name and
// UUID) and CUDA_VISIBLE_DEVICES from `env`. A driver that cannot be loaded
// or initialised (no GPU, CUDA_ERROR_NO_DEVICE) gives zero GPUs with no
// error: placement then refuses KIND_GPU instances with that count.
// Unavailable only when a visible device cannot be queried.
Expected<VisibleGpus> ProbeVisibleGpus(gpu::GpuDriver& driver, const Environment& env);

// The instances of `config`, in instance_group order, each group's listed
// GPUs in order and `count` instances on each. KIND_AUTO and KIND_MODEL take
// `default_kind`. `gpus` null: the visible GPUs are not known (tests, CPU
// serving), and a GPU group without `gpus` is placed on GPU 0 alone, as
// before multi-GPU placement. InvalidArgument naming the group and the GPU
// when a listed GPU is negative or not visible, or when a GPU instance is
// asked for and no GPU is visible.
Expected<std::vector<InstanceSpec>> PlaceInstances(const inference::ModelConfig& config, InstanceKind default_kind,
                                                   const VisibleGpus* gpus);

// Instances per GPU, ascending GPU ordinal (CPU instances are not counted).
std::map<int, int> InstancesPerGpu(const std::vector<InstanceSpec>& instances);

// For the start-up summary and the log: "GPU 0 x2, GPU 1 x2", "GPU 0 (NVIDIA
// H200) x1", "CPU x2", or both joined with ", ". `names` (nullable) names the
// GPUs by ordinal.
std::string DescribePlacement(const std::vector<InstanceSpec>& instances, const std::vector<std::string>* names);

}  // namespace ortgpu::serve
