// Layer 1 of `ortgpu doctor`: the host. OS, kernel, glibc, CPU cores,
// whether we run in a container, the NVIDIA device nodes, and the
// environment variables that hide GPUs (CUDA_VISIBLE_DEVICES,
// NVIDIA_VISIBLE_DEVICES).
//
// Everything is read through FileSystem and Environment plus a HostFacts
// value, so tests describe a machine with fakes. Not synchronised: one
// thread fills one Report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "sys/environment.h"
#include "sys/file_system.h"

namespace ortgpu::doctor {

// What uname(2), gnu_get_libc_version() and the scheduler say.
struct HostFacts {
  std::string kernel_release;  // "6.8.0-45-generic"
  std::string machine;         // "x86_64"
  std::string glibc_version;   // "2.39"
  unsigned cpu_cores = 0;      // logical CPUs available; 0 when unknown
};

// The facts of the machine this process runs on.
HostFacts ReadHostFacts();

struct HostCheckInputs {
  const FileSystem& fs;
  const Environment& env;
  HostFacts facts;
};

// What later layers need from layer 1.
struct HostSummary {
  std::string container;                  // "", "docker", "kubernetes", "podman", "container"
  std::vector<std::string> nvidia_nodes;  // "/dev/nvidia0", "/dev/nvidiactl", ...
  int gpu_node_count = 0;                 // /dev/nvidia<N> nodes
  bool uvm_node_present = false;          // /dev/nvidia-uvm
  std::optional<std::string> cuda_visible_devices;  // as set, when set
  bool cuda_visible_devices_hides_all = false;

  bool in_container() const { return !container.empty(); }
  bool gpu_nodes_present() const { return gpu_node_count > 0; }
};

// Adds the host.* findings to `report` and returns the summary.
HostSummary CheckHost(const HostCheckInputs& in, Report& report);

// Which container runtime this looks like ("" when none): /.dockerenv,
// /run/.containerenv, KUBERNETES_SERVICE_HOST, /proc/1/cgroup and
// /proc/self/mountinfo mentioning docker/containerd/kubepods/libpod.
std::string DetectContainer(const FileSystem& fs, const Environment& env);

}  // namespace ortgpu::doctor
