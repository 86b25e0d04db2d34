#include "doctor/checks_host.h"

#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include <thread>

#include "gpu/compatibility.h"

namespace ortgpu::doctor {
namespace {

constexpr const char* kContainerGpuFix =
    "docker: docker run --gpus all ... (needs nvidia-container-toolkit on the host: "
    "sudo apt-get install nvidia-container-toolkit && sudo nvidia-ctk runtime configure "
    "--runtime=docker && sudo systemctl restart docker); Kubernetes: add "
    "resources.limits: {nvidia.com/gpu: 1} to the container (NVIDIA device plugin or GPU "
    "Operator installed)";

Finding Make(std::string id, Verdict v, std::string title) {
  return MakeFinding(std::move(id), Layer::kHost, v, std::move(title));
}

std::string OsPrettyName(const FileSystem& fs) {
  auto text = fs.ReadFile("/etc/os-release", 64 * 1024);
  if (!text.ok()) return "";
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string v = line.substr(12);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
      v = v.substr(1, v.size() - 2);
    }
    return v;
  }
  return "";
}

bool FileMentions(const FileSystem& fs, const std::string& path,
                  std::initializer_list<const char*> words, std::string* which) {
  auto text = fs.ReadFile(path, 256 * 1024);
  if (!text.ok()) return false;
  for (const char* w : words) {
    if (text->find(w) != std::string::npos) {
      *which = w;
      return true;
    }
  }
  return false;
}

void AddDeviceNodes(const HostSummary& s, Report& report) {
  std::string nodes;
  for (const auto& n : s.nvidia_nodes) nodes += (nodes.empty() ? "" : ", ") + n;
  if (s.gpu_nodes_present()) {
    Finding f = Make("host.device_nodes", Verdict::kPass,
                     std::to_string(s.gpu_node_count) + " NVIDIA GPU device node(s) present");
    f.seen = nodes;
    f.gpu = true;
    if (!s.uvm_node_present) {
      f.verdict = Verdict::kWarn;
      f.title = "/dev/nvidia-uvm is missing";
      f.why = "without the nvidia-uvm module cuInit fails with CUDA_ERROR_UNKNOWN (999)";
      f.fix = s.in_container() ? "restart the container with --gpus all (the toolkit mounts "
                                 "/dev/nvidia-uvm); on the host run: sudo nvidia-modprobe -u -c=0"
                               : "sudo modprobe nvidia-uvm   (or: sudo nvidia-modprobe -u -c=0)";
    }
    f.facts["gpu_nodes"] = std::to_string(s.gpu_node_count);
    report.Add(std::move(f));
    return;
  }
  if (s.in_container()) {
    Finding f = Make("host.device_nodes", Verdict::kWarn,
                     "no NVIDIA GPU passed into this " + s.container + " container");
    f.seen = nodes.empty() ? "no /dev/nvidia* device nodes" : nodes + " (but no /dev/nvidia<N>)";
    f.why = "a container sees a GPU only when the runtime passes its device nodes in";
    f.fix = kContainerGpuFix;
    f.gpu = true;
    report.Add(std::move(f));
    return;
  }
  Finding f = Make("host.device_nodes", Verdict::kSkip, "no NVIDIA GPU on this machine");
  f.seen = nodes.empty() ? "no /dev/nvidia* device nodes" : nodes + " (but no /dev/nvidia<N>)";
  f.why = "no NVIDIA driver on this machine: the CUDA EP cannot run here";
  f.fix = "on a GPU machine, install the NVIDIA driver (e.g. sudo apt-get install "
          "nvidia-driver-580) and reboot";
  f.gpu = true;
  report.Add(std::move(f));
}

// CUDA enumerates CUDA_VISIBLE_DEVICES entries until the first invalid one;
// an empty value, "-1" or an invalid first entry hides every GPU.
void CheckCudaVisibleDevices(HostSummary& s, Report& report) {
  if (!s.cuda_visible_devices) return;
  const std::string& v = *s.cuda_visible_devices;
  Finding f = Make("host.cuda_visible_devices", Verdict::kInfo, "CUDA_VISIBLE_DEVICES=" + v);
  f.seen = "CUDA_VISIBLE_DEVICES=\"" + v + "\"";
  f.gpu = true;
  f.facts["cuda_visible_devices"] = v;
  std::string first = v.substr(0, v.find(','));
  while (!first.empty() && first.front() == ' ') first.erase(0, 1);
  bool hides_all = first.empty() || first[0] == '-';
  std::string reason = "an empty value or a negative index hides every GPU from CUDA";
  if (!hides_all && s.gpu_node_count > 0 && first.find_first_not_of("0123456789") ==
                                                 std::string::npos) {
    if (std::stoi(first) >= s.gpu_node_count) {
      hides_all = true;
      reason = "its first index " + first + " does not exist (this machine has " +
               std::to_string(s.gpu_node_count) +
               " GPU node(s)), and CUDA stops at the first invalid entry";
    }
  }
  if (hides_all) {
    s.cuda_visible_devices_hides_all = true;
    f.verdict = s.gpu_nodes_present() ? Verdict::kFail : Verdict::kWarn;
    f.title = "CUDA_VISIBLE_DEVICES hides every GPU";
    f.why = reason + ": the CUDA EP will find no device and ORT falls back to the CPU";
    f.fix = "unset CUDA_VISIBLE_DEVICES   (or name the GPUs: export CUDA_VISIBLE_DEVICES=0)";
  }
  report.Add(std::move(f));
}

void CheckNvidiaVisibleDevices(const HostSummary& s, const Environment& env, Report& report) {
  auto v = env.Get("NVIDIA_VISIBLE_DEVICES");
  if (!v) return;
  Finding f = Make("host.nvidia_visible_devices", Verdict::kInfo, "NVIDIA_VISIBLE_DEVICES=" + *v);
  f.seen = "NVIDIA_VISIBLE_DEVICES=\"" + *v + "\"";
  f.facts["nvidia_visible_devices"] = *v;
  if (s.in_container() && (v->empty() || *v == "void" || *v == "none")) {
    f.verdict = Verdict::kWarn;
    f.title = "NVIDIA_VISIBLE_DEVICES asks the container toolkit for no GPU";
    f.why = "\"" + *v + "\" makes nvidia-container-toolkit pass no GPU into the container";
    f.fix = "start the container with NVIDIA_VISIBLE_DEVICES=all (or --gpus all)";
    f.gpu = true;
  }
  report.Add(std::move(f));
}

}  // namespace

HostFacts ReadHostFacts() {
  HostFacts h;
  utsname u{};
  if (uname(&u) == 0) {
    h.kernel_release = u.release;
    h.machine = u.machine;
  }
  h.glibc_version = gnu_get_libc_version();
  h.cpu_cores = std::thread::hardware_concurrency();
  return h;
}

std::string DetectContainer(const FileSystem& fs, const Environment& env) {
  if (env.Get("KUBERNETES_SERVICE_HOST")) return "kubernetes";
  if (fs.Exists("/.dockerenv")) return "docker";
  if (fs.Exists("/run/.containerenv")) return "podman";
  std::string word;
  for (const char* path : {"/proc/1/cgroup", "/proc/self/mountinfo"}) {
    if (FileMentions(fs, path, {"kubepods", "docker", "libpod", "containerd", "lxc"}, &word)) {
      if (word == "kubepods") return "kubernetes";
      if (word == "libpod") return "podman";
      if (word == "docker") return "docker";
      return "container";
    }
  }
  if (env.Get("container")) return "container";  // systemd-nspawn, podman
  return "";
}

HostSummary CheckHost(const HostCheckInputs& in, Report& report) {
  HostSummary s;
  const std::string os = OsPrettyName(in.fs);
  {
    Finding f = Make("host.os", Verdict::kInfo, os.empty() ? "operating system unknown" : os);
    f.seen = os.empty() ? "/etc/os-release has no PRETTY_NAME" : "/etc/os-release: " + os;
    f.facts["os"] = os;
    report.Add(std::move(f));
  }
  {
    Finding f = Make("host.kernel", Verdict::kInfo,
                     "Linux " + in.facts.kernel_release + " " + in.facts.machine);
    f.seen = "uname: " + in.facts.kernel_release + " " + in.facts.machine;
    f.facts["kernel"] = in.facts.kernel_release;
    f.facts["machine"] = in.facts.machine;
    report.Add(std::move(f));
  }
  {
    Finding f = Make("host.glibc", Verdict::kInfo, "glibc " + in.facts.glibc_version);
    f.seen = "gnu_get_libc_version() = " + in.facts.glibc_version;
    f.facts["glibc"] = in.facts.glibc_version;
    if (gpu::ParseVersion(in.facts.glibc_version) &&
        gpu::CompareVersions(in.facts.glibc_version, "2.28") < 0) {
      f.verdict = Verdict::kWarn;
      f.why = "ONNX Runtime's Linux binaries are built for manylinux_2_28 and need glibc >= 2.28";
      f.fix = "use a newer base image (Debian 11+, Ubuntu 20.04+, RHEL 8+)";
    }
    report.Add(std::move(f));
  }
  {
    Finding f = Make("host.cpu", Verdict::kInfo, std::to_string(in.facts.cpu_cores) + " CPU cores");
    f.seen = std::to_string(in.facts.cpu_cores) + " logical CPUs available to this process";
    f.facts["cpu_cores"] = std::to_string(in.facts.cpu_cores);
    report.Add(std::move(f));
  }
  s.container = DetectContainer(in.fs, in.env);
  {
    Finding f = Make("host.container", Verdict::kInfo,
                     s.in_container() ? "running in a " + s.container + " container"
                                      : "not in a container");
    f.seen = s.in_container() ? "container markers found (" + s.container + ")"
                              : "no /.dockerenv, /run/.containerenv, KUBERNETES_SERVICE_HOST "
                                "or container cgroup";
    f.facts["container"] = s.container;
    report.Add(std::move(f));
  }
  if (auto entries = in.fs.ListDirectory("/dev"); entries.ok()) {
    for (const auto& e : *entries) {
      if (e.name.rfind("nvidia", 0) != 0) continue;
      s.nvidia_nodes.push_back("/dev/" + e.name);
      const std::string rest = e.name.substr(6);
      if (!rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos) {
        ++s.gpu_node_count;
      }
      if (e.name == "nvidia-uvm") s.uvm_node_present = true;
    }
  }
  AddDeviceNodes(s, report);
  s.cuda_visible_devices = in.env.Get("CUDA_VISIBLE_DEVICES");
  CheckCudaVisibleDevices(s, report);
  CheckNvidiaVisibleDevices(s, in.env, report);
  return s;
}

}  // namespace ortgpu::doctor
