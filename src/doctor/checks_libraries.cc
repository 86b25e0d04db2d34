#include "doctor/checks_libraries.h"

#include <fmt/format.h>

#include "sys/file_system.h"

namespace ortgpu::doctor {
namespace {

std::vector<int> Numbers(const std::string& text) {
  std::vector<int> out;
  int cur = -1;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
    } else {
      if (cur >= 0) out.push_back(cur);
      cur = -1;
      if (c != '.') break;
    }
  }
  if (cur >= 0) out.push_back(cur);
  return out;
}

std::string CopiesText(const std::vector<gpu::LibraryCopy>& copies) {
  std::string s;
  for (const auto& c : copies) {
    s += fmt::format("{}{} ({}, {})", s.empty() ? "" : "; ", c.real_path.empty() ? c.path : c.real_path,
                     c.version.empty() ? "unknown" : c.version, gpu::CandidateSourceName(c.source));
  }
  return s;
}

const gpu::PreloadResult* PreloadFor(const std::vector<gpu::PreloadResult>& preload, const std::string& soname) {
  for (const auto& p : preload) {
    if (p.soname == soname) return &p;
  }
  return nullptr;
}

}  // namespace

std::optional<int> CudaVersionNumber(const std::string& text) {
  auto n = Numbers(text);
  if (n.size() < 2) return std::nullopt;
  return n[0] * 1000 + n[1] * 10;
}

std::optional<int> CudnnVersionNumber(const std::string& text) {
  auto n = Numbers(text);
  if (n.size() < 3) return std::nullopt;
  return n[0] * 10000 + n[1] * 100 + n[2];
}

LibraryFacts CheckLibraries(const LibraryCheckInputs& in, Report& report) {
  LibraryFacts facts;
  {
    Finding f;
    f.id = "libraries.ep";
    f.layer = Layer::kLibraries;
    f.gpu = true;
    if (!in.ep_error.empty()) {
      f.verdict = Verdict::kFail;
      f.title = "cannot read the CUDA EP library";
      f.seen = in.ep_error;
      f.fix = "reinstall ortgpu (make build copies libonnxruntime_providers_cuda.so into build/lib)";
    } else {
      f.verdict = Verdict::kInfo;
      f.title = "CUDA EP dependencies (read from its ELF file)";
      std::string needed;
      for (const auto& n : in.ep_needed) needed += (needed.empty() ? "" : ", ") + n;
      f.seen = in.ep_path + " NEEDED: " + needed + "; opened at run time: libcudnn.so.9 (and its sub-libraries), "
               "libcufft.so.12";
      f.facts["needed"] = needed;
    }
    report.Add(std::move(f));
  }

  std::vector<const gpu::LibraryReport*> sub_libraries;
  for (const auto& lib : in.libraries) {
    if (lib.linkage == gpu::EpLinkage::kDriver) continue;  // layer 2 covers the driver
    if (lib.linkage == gpu::EpLinkage::kOpenedByCudnn) {
      sub_libraries.push_back(&lib);
      continue;
    }
    Finding f;
    f.id = "libraries." + lib.component;
    f.layer = Layer::kLibraries;
    f.gpu = true;
    f.facts["soname"] = lib.soname;
    f.facts["linkage"] = std::string(gpu::EpLinkageName(lib.linkage));
    const gpu::PreloadResult* pre = PreloadFor(in.preload, lib.soname);
    const bool preloaded = pre && pre->action == gpu::PreloadAction::kPreloaded;
    std::string path = lib.loaded_path;
    if (path.empty() && preloaded) path = pre->path;
    if (path.empty() && lib.picked) path = lib.picked->real_path.empty() ? lib.picked->path : lib.picked->real_path;
    const bool usable = lib.loaded || (lib.found && !lib.load_attempted) || preloaded;
    std::string version = lib.loaded_version;
    if (version.empty() && lib.picked) version = lib.picked->version;

    if (usable) {
      f.verdict = lib.missing_symbols.empty() ? Verdict::kPass : Verdict::kFail;
      f.title = fmt::format("{} {} ({})", lib.display, version.empty() ? "version unknown" : version, lib.soname);
      std::string how = preloaded ? fmt::format("preloaded by ortgpu from {} ({})", pre->path,
                                                gpu::CandidateSourceName(pre->source))
                                  : lib.picked ? fmt::format("found by the loader via {}",
                                                             gpu::CandidateSourceName(lib.picked->source))
                                               : "already loaded";
      f.seen = fmt::format("{}; {}", path, how);
      if (!lib.loaded_version.empty()) f.seen += "; version asked from the library: " + lib.loaded_version;
      if (!lib.built_against_cudart.empty()) f.seen += "; built for CUDA " + lib.built_against_cudart;
      f.facts["path"] = path;
      f.facts["version"] = version;
      if (!lib.other_copies.empty()) {
        f.seen += "; other copies: " + CopiesText(lib.other_copies);
        f.facts["other_copies"] = CopiesText(lib.other_copies);
      }
      if (!lib.missing_symbols.empty()) {
        std::string names;
        for (size_t i = 0; i < lib.missing_symbols.size() && i < 5; ++i) {
          names += (names.empty() ? "" : ", ") + lib.missing_symbols[i].name + "@" + lib.missing_symbols[i].version;
        }
        f.title = fmt::format("{} at {} lacks {} symbols the CUDA EP needs", lib.soname, path,
                              lib.missing_symbols.size());
        f.seen += "; missing: " + names;
        f.why = "the EP will fail to load, or crash when it first calls them: this copy is older than the one it "
                "was built against";
        f.fix = lib.pip_install.empty() ? "install a newer " + lib.display : lib.pip_install;
        for (const auto& c : lib.other_copies) {
          f.fix += fmt::format("; or use the copy in {}: export LD_LIBRARY_PATH={}:$LD_LIBRARY_PATH", c.folder,
                               c.folder);
          break;
        }
      }
      if (lib.component == "cudart") facts.cudart_version = CudaVersionNumber(version);
      if (lib.component == "cudnn") {
        facts.cudnn_version = CudnnVersionNumber(lib.loaded_version.empty() ? version : lib.loaded_version);
        if (auto v = CudaVersionNumber(lib.built_against_cudart)) facts.cudnn_cuda_major = *v / 1000;
      }
    } else {
      // Not usable: missing everywhere, or present but failing to load.
      const bool essential = lib.component != "cufft";
      if (!in.gpu_usable) {
        f.verdict = Verdict::kSkip;
      } else {
        f.verdict = essential ? Verdict::kFail : Verdict::kWarn;
      }
      if (!lib.load_error.empty()) {
        f.title = lib.soname + " failed to load";
        f.seen = path + ": " + lib.load_error;
        f.why = "the CUDA EP cannot start without it";
        f.fix = "reinstall " + (lib.pip_install.empty() ? lib.display : lib.pip_install);
      } else if (!lib.other_copies.empty()) {
        const auto& c = lib.other_copies.front();
        f.title = lib.soname + " not on the loader's path";
        f.seen = "copies: " + CopiesText(lib.other_copies);
        f.why = "the CUDA EP asks the dynamic loader for " + lib.soname + " by name";
        f.fix = fmt::format("export LD_LIBRARY_PATH={}:$LD_LIBRARY_PATH", c.folder);
      } else {
        f.title = lib.soname + " not found";
        f.seen = "not on LD_LIBRARY_PATH, in the ld.so cache, the default folders, pip or conda environments, or "
                 "/usr/local/cuda*";
        f.why = lib.linkage == gpu::EpLinkage::kNeeded
                    ? "it is in the CUDA EP's NEEDED list: the EP cannot load without it"
                    : "the CUDA EP opens it at run time" + std::string(essential ? " and cannot run convolutions without it" : " for FFT operators");
        f.fix = lib.pip_install.empty() ? "" : lib.pip_install;
        if (!lib.system_package.empty()) {
          f.fix += std::string(f.fix.empty() ? "" : ", or ") + "apt-get install " + lib.system_package;
        }
      }
      if (!in.gpu_usable) f.why = "no usable GPU, so nothing needs it here; " + f.why;
      if (essential && in.gpu_usable && facts.first_missing.empty()) facts.first_missing = lib.soname;
    }
    report.Add(std::move(f));
  }

  if (!sub_libraries.empty()) {
    Finding f;
    f.id = "libraries.cudnn_sublibraries";
    f.layer = Layer::kLibraries;
    f.gpu = true;
    std::string missing, present;
    for (const auto* lib : sub_libraries) {
      if (lib->found || lib->loaded) {
        present += (present.empty() ? "" : ", ") + lib->soname;
      } else {
        missing += (missing.empty() ? "" : ", ") + lib->soname;
      }
    }
    if (missing.empty()) {
      f.verdict = Verdict::kPass;
      f.title = fmt::format("all {} cuDNN sub-libraries found", sub_libraries.size());
      f.seen = present;
    } else {
      f.verdict = in.gpu_usable ? Verdict::kFail : Verdict::kSkip;
      f.title = "cuDNN sub-libraries missing";
      f.seen = "missing: " + missing;
      f.why = "libcudnn.so.9 loads them by name when a convolution first runs; the session starts, then fails";
      f.fix = "install the whole cuDNN package (pip install nvidia-cudnn-cu13) rather than copying libcudnn.so.9";
    }
    report.Add(std::move(f));
  }
  return facts;
}

}  // namespace ortgpu::doctor
