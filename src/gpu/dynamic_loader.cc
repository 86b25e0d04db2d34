#include "gpu/dynamic_loader.h"

#include <dlfcn.h>
#include <link.h>

namespace ortgpu::gpu {
namespace {

std::string LastDlError(const std::string& fallback) {
  const char* e = dlerror();
  return e != nullptr ? std::string(e) : fallback;
}

class PosixDynamicLoader final : public DynamicLoader {
 public:
  Expected<LibraryHandle> Open(const std::string& name_or_path, SymbolScope scope) override {
    dlerror();  // clear a stale message
    const int flags = RTLD_NOW | (scope == SymbolScope::kGlobal ? RTLD_GLOBAL : RTLD_LOCAL);
    void* h = dlopen(name_or_path.c_str(), flags);
    if (h == nullptr) return Unavailable(LastDlError("dlopen(" + name_or_path + ") failed"));
    return h;
  }

  Expected<void*> Symbol(LibraryHandle handle, const std::string& name) override {
    dlerror();
    void* p = dlsym(handle, name.c_str());
    if (p == nullptr) return NotFound(LastDlError("symbol " + name + " not found"));
    return p;
  }

  Expected<std::string> PathOf(LibraryHandle handle) override {
    struct link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) {
      return Internal(LastDlError("dlinfo(RTLD_DI_LINKMAP) failed"));
    }
    return std::string(map->l_name != nullptr ? map->l_name : "");
  }

  std::vector<std::string> LoadedLibraries() override {
    std::vector<std::string> out;
    dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t, void* data) {
          auto* v = static_cast<std::vector<std::string>*>(data);
          if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') v->emplace_back(info->dlpi_name);
          return 0;
        },
        &out);
    return out;
  }
};

}  // namespace

DynamicLoader& RealDynamicLoader() {
  static PosixDynamicLoader loader;
  return loader;
}

Expected<OpenedLibrary> OpenLibrary(DynamicLoader& loader, const std::string& name_or_path, SymbolScope scope) {
  Expected<LibraryHandle> handle = loader.Open(name_or_path, scope);
  if (!handle.ok()) {
    return Unavailable("cannot load " + name_or_path + ": " + handle.status().message());
  }
  OpenedLibrary lib{*handle, ""};
  // Without the mapped path the requested name still tells the user what was opened.
  if (Expected<std::string> path = loader.PathOf(lib.handle); path.ok()) lib.path = *path;
  if (lib.path.empty()) lib.path = name_or_path;
  return lib;
}

std::vector<std::string> ResolveSymbols(DynamicLoader& loader, LibraryHandle handle,
                                        const std::vector<SymbolSlot>& slots) {
  std::vector<std::string> missing;
  for (const SymbolSlot& slot : slots) {
    Expected<void*> symbol = loader.Symbol(handle, slot.name);
    void* address = symbol.ok() ? *symbol : nullptr;
    slot.assign(slot.target, address);
    if (address == nullptr) missing.emplace_back(slot.name);
  }
  return missing;
}

Status MissingSymbolsError(const std::string& path, std::string_view api, const std::vector<std::string>& missing,
                           std::string_view advice) {
  if (missing.empty()) return Status::Ok();
  std::string names;
  for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
  return Unavailable(path + " lacks the " + std::string(api) + " entry points " + names + "; " + std::string(advice));
}

}  // namespace ortgpu::gpu
