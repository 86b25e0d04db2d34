#include "gpu/library_probe.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

namespace ortgpu::gpu {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "libcudnn.so.9" -> 9; -1 when the soname has no number.
int SonameMajor(std::string_view soname) {
  const auto pos = soname.rfind(".so.");
  if (pos == std::string_view::npos) return -1;
  int v = 0;
  for (char c : soname.substr(pos + 4)) {
    if (!IsDigit(c)) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The version of a copy that is not loaded (file name, dist-info, .rodata).
void FillCopyVersion(const FileSystem& fs, const CudaLibrary& lib, const LibraryProbeOptions& options,
                     LibraryCopy* copy) {
  if (auto v = VersionFromFileName(copy->real_path); !v.empty()) {
    copy->version = v;
    copy->version_origin = "file_name";
    return;
  }
  if (auto v = VersionFromDistInfo(fs, DirName(copy->real_path), lib.pip_packages); !v.empty()) {
    copy->version = v;
    copy->version_origin = "dist_info";
    return;
  }
  if (auto v = VersionFromDistInfo(fs, copy->folder, lib.pip_packages); !v.empty()) {
    copy->version = v;
    copy->version_origin = "dist_info";
    return;
  }
  auto size = fs.FileSize(copy->real_path);
  if (size.ok() && *size <= options.max_version_scan_bytes) {
    auto elf = ElfReader::Open(fs, copy->real_path);
    if (elf.ok()) {
      auto rodata = elf->SectionBytes(".rodata");
      if (rodata.ok()) {
        if (auto v = VersionFromRodata(*rodata, lib.component, SonameMajor(lib.soname)); !v.empty()) {
          copy->version = v;
          copy->version_origin = "rodata";
          return;
        }
      }
    }
  }
  copy->version = "unknown";
  copy->version_origin = "unknown";
}

LibraryCopy ToCopy(const LibraryCandidate& c) {
  LibraryCopy copy;
  copy.path = c.path;
  copy.real_path = c.real_path;
  copy.folder = c.folder;
  copy.source = c.source;
  return copy;
}

template <typename Fn>
Fn As(void* p) {
  return reinterpret_cast<Fn>(p);
}

// Asks a loaded library its version; fills loaded_version/built_against_cudart
// or version_error.
void AskVersion(DynamicLoader& loader, LibraryHandle h, const CudaLibrary& lib, LibraryReport* r) {
  const auto sym = [&](const char* name) -> void* {
    auto p = loader.Symbol(h, name);
    if (!p.ok()) {
      r->version_error = lib.soname + " has no " + name + " (" + p.status().message() +
                         "); it may be a stub or a different major version";
      return nullptr;
    }
    return *p;
  };
  const auto int_query = [&](const char* name, std::string (*decode)(long)) {
    if (void* p = sym(name)) {
      int v = 0;
      const int rc = As<int (*)(int*)>(p)(&v);
      if (rc != 0) {
        r->version_error = std::string(name) + " returned error " + std::to_string(rc);
      } else {
        r->loaded_version = decode(v);
      }
    }
  };
  switch (lib.version_query) {
    case VersionQuery::kNone:
      break;
    case VersionQuery::kCudaRuntime:
      int_query("cudaRuntimeGetVersion", &DecodeCudaVersion);
      break;
    case VersionQuery::kCudaDriver:
      int_query("cuDriverGetVersion", &DecodeCudaVersion);
      break;
    case VersionQuery::kCurand:
      int_query("curandGetVersion", &DecodeCurandVersion);
      break;
    case VersionQuery::kCufft:
      int_query("cufftGetVersion", &DecodeCurandVersion);
      break;
    case VersionQuery::kCublas:
      if (void* p = sym("cublasGetProperty")) {
        auto fn = As<CublasGetPropertyFn>(p);
        int major = 0, minor = 0, patch = 0;
        if (fn(kCublasPropertyMajor, &major) != 0 || fn(kCublasPropertyMinor, &minor) != 0 ||
            fn(kCublasPropertyPatch, &patch) != 0) {
          r->version_error = "cublasGetProperty returned an error";
        } else {
          r->loaded_version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
        }
      }
      break;
    case VersionQuery::kCublasLt:
      if (void* p = sym("cublasLtGetVersion")) r->loaded_version = DecodeCublasVersion(static_cast<long>(As<CublasLtGetVersionFn>(p)()));
      break;
    case VersionQuery::kCudnn:
      if (void* p = sym("cudnnGetVersion")) r->loaded_version = DecodeCudnnVersion(static_cast<long>(As<CudnnGetVersionFn>(p)()));
      break;
    case VersionQuery::kNvml:
      if (void* init = sym("nvmlInit_v2")) {
        void* get = sym("nvmlSystemGetDriverVersion");
        const int rc = As<NvmlInitFn>(init)();
        if (rc != 0) {
          r->version_error = "nvmlInit_v2 returned error " + std::to_string(rc) +
                             " (no NVIDIA driver loaded, or driver/library mismatch)";
        } else {
          char buf[96] = {};
          if (get != nullptr && As<NvmlSystemGetDriverVersionFn>(get)(buf, sizeof(buf)) == 0) {
            r->loaded_version = buf;
          }
          if (auto shutdown = loader.Symbol(h, "nvmlShutdown"); shutdown.ok()) As<NvmlInitFn>(*shutdown)();
        }
      }
      break;
  }
  if (!lib.cudart_version_symbol.empty()) {
    auto p = loader.Symbol(h, lib.cudart_version_symbol);
    if (p.ok()) r->built_against_cudart = DecodeCudaVersion(static_cast<long>(As<size_t (*)()>(*p)()));
  }
}

}  // namespace

std::string VersionFromFileName(std::string_view path) {
  const std::string_view base = path.substr(path.find_last_of('/') == std::string_view::npos
                                                ? 0 : path.find_last_of('/') + 1);
  const auto pos = base.find(".so.");
  if (pos == std::string_view::npos) return "";
  const std::string_view v = base.substr(pos + 4);
  if (v.empty() || v.find('.') == std::string_view::npos) return "";
  for (char c : v) {
    if (!IsDigit(c) && c != '.') return "";
  }
  return std::string(v);
}

std::string VersionFromDistInfo(const FileSystem& fs, const std::string& folder,
                                const std::vector<std::string>& pip_packages) {
  std::vector<std::string> prefixes;
  for (const auto& p : pip_packages) {
    std::string n = p;
    std::replace(n.begin(), n.end(), '-', '_');
    prefixes.push_back(n + "-");
  }
  std::string dir = folder;
  for (int up = 0; up < 3 && dir != "/" && dir != "."; ++up) {
    dir = DirName(dir);
    for (const std::string& where : {dir, JoinPath(dir, "dist-info")}) {
      auto entries = fs.ListDirectory(where);
      if (!entries.ok()) continue;
      for (const auto& e : *entries) {
        constexpr std::string_view kSuffix = ".dist-info";
        if (e.name.size() <= kSuffix.size() ||
            e.name.compare(e.name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
          continue;
        }
        for (const auto& prefix : prefixes) {
          if (e.name.rfind(prefix, 0) == 0 && e.name.size() > prefix.size() + kSuffix.size()) {
            return e.name.substr(prefix.size(), e.name.size() - prefix.size() - kSuffix.size());
          }
        }
      }
    }
  }
  return "";
}

std::string VersionFromRodata(std::string_view rodata, std::string_view component, int major) {
  if (major < 0 || component.empty()) return "";
  const std::string needle = Lower(component);
  const std::string want = std::to_string(major) + ".";
  size_t start = 0;
  while (start < rodata.size()) {
    size_t end = rodata.find('\0', start);
    if (end == std::string_view::npos) end = rodata.size();
    const std::string_view s = rodata.substr(start, end - start);
    start = end + 1;
    if (s.size() < needle.size() || s.size() > 512) continue;
    const std::string low = Lower(s);
    const auto at = low.find(needle);
    if (at == std::string::npos) continue;
    // The first "<major>.<digits>..." token after the name, standing alone.
    for (size_t i = at + needle.size(); i + want.size() < s.size(); ++i) {
      if (s.compare(i, want.size(), want) != 0 || (i > 0 && (IsDigit(s[i - 1]) || s[i - 1] == '.'))) {
        continue;
      }
      size_t j = i + want.size();
      if (!IsDigit(s[j])) continue;
      while (j < s.size() && (IsDigit(s[j]) || (s[j] == '.' && j + 1 < s.size() && IsDigit(s[j + 1])))) ++j;
      return std::string(s.substr(i, j - i));
    }
  }
  return "";
}

std::vector<MissingSymbol> FindMissingSymbols(const std::vector<ElfSymbol>& consumer_undefined,
                                              std::string_view provider_soname,
                                              const ElfReader& provider) {
  std::set<std::pair<std::string, std::string>> defined;
  std::set<std::string> defined_names;
  for (const auto& s : provider.defined_symbols()) {
    defined.emplace(s.name, s.version);
    defined_names.insert(s.name);
  }
  const bool versioned = !provider.version_definitions().empty();
  std::vector<MissingSymbol> out;
  for (const auto& u : consumer_undefined) {
    if (u.weak || u.version_library != provider_soname) continue;
    const bool present = versioned ? defined.count({u.name, u.version}) != 0 : defined_names.count(u.name) != 0;
    if (!present) out.push_back({u.name, u.version});
  }
  return out;
}

std::vector<LibraryReport> ProbeCudaLibraries(const FileSystem& fs, const LibrarySearch& search,
                                              DynamicLoader* loader, const LibraryProbeOptions& options) {
  // The EP's imports, read once (ranged: its dynamic symbol tables only).
  std::vector<ElfSymbol> ep_imports;
  Status ep_status;
  if (options.ep_library != nullptr) {
    ep_imports = options.ep_library->undefined_symbols();
  } else if (!options.ep_library_path.empty()) {
    auto ep = ElfReader::Open(fs, options.ep_library_path);
    if (ep.ok()) {
      ep_imports = ep->undefined_symbols();
    } else {
      ep_status = ep.status();
    }
  }

  std::vector<LibraryReport> reports;
  for (const CudaLibrary& lib : CudaLibraries()) {
    LibraryReport r;
    r.soname = lib.soname;
    r.component = lib.component;
    r.display = lib.display;
    r.linkage = lib.linkage;
    r.needed_by_ep = lib.linkage == EpLinkage::kNeeded;
    r.pip_packages = lib.pip_packages;
    r.pip_install = lib.pip_install;
    r.system_package = lib.system_package;

    const LibrarySearchResult found = search.Find(lib.soname);
    if (found.loader_pick) {
      r.found = true;
      r.picked = ToCopy(*found.loader_pick);
    }
    for (const auto& c : found.other_copies) {
      r.other_copies.push_back(ToCopy(c));
      FillCopyVersion(fs, lib, options, &r.other_copies.back());
    }

    if (options.load_libraries && loader != nullptr && lib.version_query != VersionQuery::kNone) {
      r.load_attempted = true;
      auto h = loader->Open(lib.soname, SymbolScope::kLocal);
      if (!h.ok()) {
        r.load_error = h.status().message();
      } else {
        r.loaded = true;
        if (auto p = loader->PathOf(*h); p.ok()) r.loaded_path = *p;
        AskVersion(*loader, *h, lib, &r);
      }
    }
    if (r.picked) {
      const bool same_file = r.loaded && !r.loaded_version.empty() &&
                             fs.RealPath(r.loaded_path) == r.picked->real_path;
      if (same_file) {
        r.picked->version = r.loaded_version;
        r.picked->version_origin = "loaded";
      } else {
        FillCopyVersion(fs, lib, options, &*r.picked);
      }
    }

    // Symbol check: only libraries the EP imports versioned symbols from.
    if (!ep_status.ok()) {
      if (r.needed_by_ep) r.symbols_error = ep_status.message();
    } else if (!ep_imports.empty() && r.picked) {
      const bool imports_from_it = std::any_of(ep_imports.begin(), ep_imports.end(),
                                               [&](const ElfSymbol& s) { return s.version_library == lib.soname; });
      if (imports_from_it) {
        const std::string file = r.loaded && !r.loaded_path.empty() ? fs.RealPath(r.loaded_path) : r.picked->real_path;
        auto size = fs.FileSize(file);
        if (size.ok() && *size > options.max_symbol_read_bytes) {
          r.symbols_error = file + " is larger than max_symbol_read_bytes; symbols not checked";
        } else if (auto provider = ElfReader::Open(fs, file); !provider.ok()) {
          r.symbols_error = provider.status().message();
        } else {
          r.symbols_checked = true;
          r.missing_symbols = FindMissingSymbols(ep_imports, lib.soname, *provider);
        }
      }
    }
    reports.push_back(std::move(r));
  }
  return reports;
}

}  // namespace ortgpu::gpu
