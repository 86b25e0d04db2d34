#include "serve/repository/instance_placement.h"

#include <algorithm>

namespace ortgpu::serve {

std::string InstanceSpec::Describe(size_t index) const {
  return "instance " + std::to_string(index) +
         (kind == InstanceKind::kGpu ? " (GPU " + std::to_string(gpu) + ")" : " (CPU)");
}

std::string VisibleGpus::Uuid(int gpu) const {
  return gpu >= 0 && gpu < count() ? uuids[static_cast<size_t>(gpu)] : "";
}

std::string VisibleGpus::DescribeCount() const {
  const int n = count();
  std::string out = std::to_string(n) + (n == 1 ? " GPU is" : " GPUs are") + " visible";
  out += cuda_visible_devices ? " (CUDA_VISIBLE_DEVICES=" + *cuda_visible_devices + ")"
                              : " (CUDA_VISIBLE_DEVICES unset)";
  return out;
}

Expected<VisibleGpus> ProbeVisibleGpus(gpu::GpuDriver& driver, const Environment& env) {
  VisibleGpus out;
  out.cuda_visible_devices = env.Get("CUDA_VISIBLE_DEVICES");
  // No driver, or cuInit refusing (CUDA_ERROR_NO_DEVICE when
  // CUDA_VISIBLE_DEVICES hides every GPU): no GPU is visible.
  if (!driver.Load().ok() || !driver.Init().ok()) return out;
  auto count = driver.DeviceCount();
  if (!count.ok()) return out;
  for (int i = 0; i < *count; ++i) {
    auto props = driver.Device(i);
    if (!props.ok()) {
      return Unavailable("the CUDA driver counts " + std::to_string(*count) + " GPUs but GPU " + std::to_string(i) +
                         " cannot be queried (" + props.status().message() + "); run `ortgpu doctor`");
    }
    out.uuids.push_back(props->uuid);
    out.names.push_back(props->name);
  }
  return out;
}

namespace {

InstanceKind KindOf(const inference::ModelInstanceGroup& g, InstanceKind default_kind) {
  if (g.kind() == inference::ModelInstanceGroup::KIND_GPU) return InstanceKind::kGpu;
  if (g.kind() == inference::ModelInstanceGroup::KIND_CPU) return InstanceKind::kCpu;
  return default_kind;
}

std::string GroupName(const inference::ModelInstanceGroup& g, int index) {
  return "instance_group " + std::to_string(index) + (g.name().empty() ? "" : " ('" + g.name() + "')");
}

// Every visible GPU, or GPU 0 alone when the visible GPUs are not known.
Expected<std::vector<int>> EveryGpu(const VisibleGpus* gpus, const std::string& what) {
  if (gpus == nullptr) return std::vector<int>{0};
  if (gpus->count() == 0) {
    return InvalidArgument(what + " asks for GPU instances but " + gpus->DescribeCount() +
                           "; run `ortgpu doctor` to see why, make a GPU visible, or use KIND_CPU");
  }
  std::vector<int> all;
  for (int i = 0; i < gpus->count(); ++i) all.push_back(i);
  return all;
}

}  // namespace

Expected<std::vector<InstanceSpec>> PlaceInstances(const inference::ModelConfig& config, InstanceKind default_kind,
                                                   const VisibleGpus* gpus) {
  std::vector<InstanceSpec> out;
  for (int gi = 0; gi < config.instance_group_size(); ++gi) {
    const auto& g = config.instance_group(gi);
    const InstanceKind kind = KindOf(g, default_kind);
    const int count = g.count() > 0 ? g.count() : 1;
    if (kind == InstanceKind::kCpu) {
      out.insert(out.end(), static_cast<size_t>(count), InstanceSpec{InstanceKind::kCpu, 0});
      continue;
    }
    std::vector<int> listed(g.gpus().begin(), g.gpus().end());
    if (listed.empty()) {
      ORTGPU_ASSIGN_OR_RETURN(listed, EveryGpu(gpus, GroupName(g, gi)));
    }
    for (int gpu : listed) {
      if (gpu < 0 || (gpus != nullptr && gpu >= gpus->count())) {
        const std::string known =
            gpus == nullptr ? "GPU ids are CUDA ordinals from 0"
                            : gpus->DescribeCount() + (gpus->count() > 0 ? ", numbered 0.." + std::to_string(gpus->count() - 1) : "");
        return InvalidArgument(GroupName(g, gi) + " names GPU " + std::to_string(gpu) + " but " + known +
                               "; list visible GPUs in gpus, leave gpus out to use every visible GPU, or make GPU " +
                               std::to_string(gpu) + " visible (GPU ids count after CUDA_VISIBLE_DEVICES)");
      }
      out.insert(out.end(), static_cast<size_t>(count), InstanceSpec{InstanceKind::kGpu, gpu});
    }
  }
  if (out.empty()) {
    if (default_kind == InstanceKind::kCpu) {
      out.push_back({InstanceKind::kCpu, 0});
    } else {
      ORTGPU_ASSIGN_OR_RETURN(const std::vector<int> every, EveryGpu(gpus, "the model (no instance_group)"));
      for (int gpu : every) out.push_back({InstanceKind::kGpu, gpu});
    }
  }
  return out;
}

std::map<int, int> InstancesPerGpu(const std::vector<InstanceSpec>& instances) {
  std::map<int, int> out;
  for (const auto& s : instances) {
    if (s.kind == InstanceKind::kGpu) ++out[s.gpu];
  }
  return out;
}

std::string DescribePlacement(const std::vector<InstanceSpec>& instances, const std::vector<std::string>* names) {
  std::string out;
  for (const auto& [gpu, n] : InstancesPerGpu(instances)) {
    out += (out.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(gpu);
    if (names != nullptr && gpu >= 0 && static_cast<size_t>(gpu) < names->size() && !(*names)[gpu].empty()) {
      out += " (" + (*names)[static_cast<size_t>(gpu)] + ")";
    }
    out += " x" + std::to_string(n);
  }
  const auto cpu = std::count_if(instances.begin(), instances.end(),
                                 [](const InstanceSpec& s) { return s.kind == InstanceKind::kCpu; });
  if (cpu > 0) out += (out.empty() ? "" : ", ") + std::string("CPU x") + std::to_string(cpu);
  return out;
}

}  // namespace ortgpu::serve
