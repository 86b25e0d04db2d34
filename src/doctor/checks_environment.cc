#include "doctor/checks_environment.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "gpu/compatibility.h"

namespace ortgpu::doctor {
namespace {

std::vector<std::string> SplitOn(const std::string& text, const std::string& separators) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (separators.find(c) != std::string::npos) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void CheckDriverCapabilities(const EnvironmentCheckInputs& in, Report& report) {
  const auto caps = in.env.Get("NVIDIA_DRIVER_CAPABILITIES");
  if (!caps || !in.in_container) return;  // only the container toolkit reads it; unset means compute,utility
  std::set<std::string> set;
  for (const auto& c : SplitOn(Lower(*caps), ", ")) set.insert(c);
  const bool all = set.count("all") > 0;
  const bool compute = all || set.count("compute") > 0;
  const bool utility = all || set.count("utility") > 0;
  Finding f = MakeFinding("host.driver_capabilities", Layer::kHost, Verdict::kPass,
                          "NVIDIA_DRIVER_CAPABILITIES has compute and utility", /*gpu=*/true);
  f.seen = "NVIDIA_DRIVER_CAPABILITIES=\"" + *caps + "\"";
  f.facts["nvidia_driver_capabilities"] = *caps;
  const std::string fix = "start the container with -e NVIDIA_DRIVER_CAPABILITIES=compute,utility (Kubernetes: env "
                          "in the pod spec; the image's ENV sets it too)";
  if (!compute) {
    f.verdict = in.driver_loaded ? Verdict::kWarn : Verdict::kFail;
    f.title = "NVIDIA_DRIVER_CAPABILITIES lacks compute";
    f.why = "without compute the container toolkit does not mount libcuda.so.1 and the CUDA libraries of the "
            "driver: CUDA cannot start in this container";
    f.fix = fix;
  } else if (!utility) {
    f.verdict = Verdict::kWarn;
    f.title = "NVIDIA_DRIVER_CAPABILITIES lacks utility";
    f.why = "without utility the toolkit does not mount libnvidia-ml.so.1 and nvidia-smi: no memory, health or "
            "utilisation readings (doctor's health layer, serve's GPU metrics)";
    f.fix = fix;
  }
  report.Add(std::move(f));
}

void CheckModuleLoading(const EnvironmentCheckInputs& in, Report& report) {
  const auto v = in.env.Get("CUDA_MODULE_LOADING");
  // CUDA 12.2 made LAZY the default on Linux.
  const bool lazy_default = in.cudart_version.value_or(in.ep_cuda_major * 1000) >= 12020;
  if (!v && (lazy_default || in.device_ccs.empty())) return;
  Finding f = MakeFinding("host.cuda_module_loading", Layer::kHost, Verdict::kPass, "CUDA_MODULE_LOADING=LAZY",
                          /*gpu=*/false);
  f.seen = v ? "CUDA_MODULE_LOADING=\"" + *v + "\"" : "CUDA_MODULE_LOADING unset with a CUDA runtime before 12.2";
  f.facts["cuda_module_loading"] = v.value_or("");
  if (!v || Lower(*v) != "lazy") {
    f.verdict = Verdict::kWarn;
    f.title = v ? "CUDA_MODULE_LOADING=" + *v + ": every kernel loads at start" : "CUDA modules load eagerly";
    f.why = "eager loading maps every kernel of the EP, cuBLAS and cuDNN into GPU memory when the context starts: "
            "hundreds of MB per process and seconds of start-up";
    f.fix = "export CUDA_MODULE_LOADING=LAZY";
  }
  report.Add(std::move(f));
}

// Names of CUDA libraries, whose preloading overrides the copy every other
// library would find.
bool IsCudaLibrary(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  for (const char* name : {"libcudart", "libcublas", "libcudnn", "libcufft", "libcurand", "libcuda.", "libnvrtc",
                           "libnvinfer", "libnvidia-ml"}) {
    if (base.rfind(name, 0) == 0) return true;
  }
  return false;
}

void CheckLdPreload(const EnvironmentCheckInputs& in, Report& report) {
  std::vector<std::string> found;
  if (auto v = in.env.Get("LD_PRELOAD")) {
    for (const auto& p : SplitOn(*v, ": ")) {
      if (IsCudaLibrary(p)) found.push_back(p + " (LD_PRELOAD)");
    }
  }
  if (auto text = in.fs.ReadFile("/etc/ld.so.preload", 64 * 1024); text.ok()) {
    for (const auto& p : SplitOn(*text, " \t\n")) {
      if (IsCudaLibrary(p)) found.push_back(p + " (/etc/ld.so.preload)");
    }
  }
  if (found.empty()) return;
  Finding f = MakeFinding("host.ld_preload", Layer::kHost, Verdict::kWarn, "a CUDA library is preloaded",
                          /*gpu=*/true);
  for (const auto& p : found) f.seen += (f.seen.empty() ? "" : ", ") + p;
  f.why = "a preloaded library is used for every lookup in the process, ahead of RUNPATH, LD_LIBRARY_PATH and "
          "ortgpu's own preloading: one from another CUDA release than the EP's (CUDA " +
          std::to_string(in.ep_cuda_major) +
          ") makes it fail with missing symbols, or load and misbehave across an ABI change";
  f.fix = "unset LD_PRELOAD (or remove the entry from /etc/ld.so.preload); let ortgpu find the libraries "
          "(doctor's libraries layer shows which copy each one uses)";
  f.facts["preloaded"] = f.seen;
  report.Add(std::move(f));
}

void CheckJitCache(const EnvironmentCheckInputs& in, Report& report) {
  std::vector<int> jit;  // GPUs the EP has PTX but no machine code for
  for (int cc : in.device_ccs) {
    if (gpu::CheckKernelsForArch(in.ep_cubin_archs, in.ep_ptx_archs, cc).verdict == gpu::CompatVerdict::kDegraded) {
      jit.push_back(cc);
    }
  }
  if (jit.empty()) return;
  std::string archs;
  for (int cc : jit) archs += (archs.empty() ? "sm_" : ", sm_") + std::to_string(cc);
  Finding f = MakeFinding("libraries.jit_cache", Layer::kLibraries, Verdict::kPass, "", /*gpu=*/true);
  const std::string folder = CudaJitCacheFolder(in.env);
  f.facts["cache_folder"] = folder;
  f.facts["jit_archs"] = archs;
  const bool disabled = in.env.Get("CUDA_CACHE_DISABLE").value_or("0") == "1";
  // The driver creates the folder: it must exist and be writable, or its
  // nearest existing parent must be.
  std::string probe = folder;
  while (!probe.empty() && probe != "/" && !in.fs.Exists(probe)) probe = DirName(probe);
  const bool writable = !folder.empty() && in.fs.IsWritableDirectory(probe);
  f.seen = "the EP has PTX but no machine code for " + archs + ": the driver JIT-compiles its kernels at first use "
           "and keeps them in " + (folder.empty() ? std::string("(no folder: HOME and CUDA_CACHE_PATH unset)") : folder);
  if (auto max = in.env.Get("CUDA_CACHE_MAXSIZE")) f.seen += "; CUDA_CACHE_MAXSIZE=" + *max;
  const std::string fix = "export CUDA_CACHE_PATH=/path/on/a/persistent/writable/volume (and "
                          "CUDA_CACHE_MAXSIZE=4294967296 so the EP's kernels fit)";
  if (disabled) {
    f.verdict = Verdict::kWarn;
    f.title = "CUDA_CACHE_DISABLE=1: the EP's kernels are JIT-compiled again in every process";
    f.why = "compiling ORT's PTX takes minutes; without the cache every start pays it";
    f.fix = "unset CUDA_CACHE_DISABLE; " + fix;
  } else if (!writable) {
    f.verdict = Verdict::kWarn;
    f.title = "the CUDA JIT cache is not writable: kernels are compiled again in every process";
    f.seen += " (not writable by this process)";
    f.why = "compiling ORT's PTX takes minutes; a read-only HOME (containers) makes every start pay it";
    f.fix = fix;
  } else {
    f.title = "the CUDA JIT cache is writable (" + folder + ")";
    f.seen += "; the first start compiles, later ones reuse the cache (mount it on a volume in a container)";
  }
  report.Add(std::move(f));
}

void CheckCondaAndPip(const EnvironmentCheckInputs& in, Report& report) {
  bool conda = false, pip = false;
  std::map<std::string, std::string> winners;  // display name -> "path (source)"
  std::set<std::string> used_sources;
  for (const auto& lib : in.libraries) {
    std::vector<const gpu::LibraryCopy*> copies;
    if (lib.picked) copies.push_back(&*lib.picked);
    for (const auto& c : lib.other_copies) copies.push_back(&c);
    bool lib_conda = false, lib_pip = false;
    for (const auto* c : copies) {
      lib_conda = lib_conda || c->source == gpu::CandidateSource::kConda;
      lib_pip = lib_pip || c->source == gpu::CandidateSource::kPip;
    }
    conda = conda || lib_conda;
    pip = pip || lib_pip;
    if (!lib.picked) continue;
    const std::string used = lib.loaded && !lib.loaded_path.empty() ? lib.loaded_path : lib.picked->path;
    const gpu::LibraryCopy* source = &*lib.picked;
    for (const auto* c : copies) {
      if (c->path == used || c->real_path == used) source = c;
    }
    used_sources.insert(std::string(gpu::CandidateSourceName(source->source)));
    if (lib_conda && lib_pip) {
      winners[lib.display] = fmt::format("{} {} ({})", used, source->version, gpu::CandidateSourceName(source->source));
    }
  }
  if (!conda || !pip) return;
  Finding f = MakeFinding("libraries.conda_pip", Layer::kLibraries, Verdict::kInfo,
                          "a conda environment and pip wheels both provide CUDA libraries", /*gpu=*/true);
  for (const auto& [name, w] : winners) f.seen += (f.seen.empty() ? "" : "; ") + name + " used: " + w;
  if (f.seen.empty()) f.seen = "conda and pip copies of different libraries";
  std::string sources;
  for (const auto& s : used_sources) sources += (sources.empty() ? "" : ", ") + s;
  f.seen += "; the process takes its CUDA libraries from: " + sources;
  f.facts["used_sources"] = sources;
  f.why = "whichever folder the loader meets first wins for each library, so one process can mix conda's and "
          "pip's builds: cuDNN and cuBLAS check the CUDA runtime they run with, and a mix across CUDA majors or "
          "an older runtime than a library was built for fails or misbehaves";
  f.fix = "use one source: pip install the nvidia-*-cu" + std::to_string(in.ep_cuda_major) +
          " wheels and remove conda's cuda-* packages from the environment (or the reverse), then run doctor again";
  if (used_sources.count("conda") && used_sources.count("pip")) {
    f.verdict = Verdict::kWarn;
    f.title = "this process mixes CUDA libraries from conda and from pip";
  }
  report.Add(std::move(f));
}

}  // namespace

std::string CudaJitCacheFolder(const Environment& env) {
  if (auto p = env.Get("CUDA_CACHE_PATH"); p && !p->empty()) return *p;
  if (auto home = env.Get("HOME"); home && !home->empty()) return JoinPath(*home, ".nv/ComputeCache");
  return "";
}

void CheckEnvironment(const EnvironmentCheckInputs& in, Report& report) {
  CheckDriverCapabilities(in, report);
  CheckModuleLoading(in, report);
  CheckLdPreload(in, report);
  CheckJitCache(in, report);
  CheckCondaAndPip(in, report);
}

}  // namespace ortgpu::doctor
