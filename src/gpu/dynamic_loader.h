// DynamicLoader: the seam over dlopen/dlsym/dlinfo/dl_iterate_phdr, so the
// library probe and the preloader can be tested with FakeDynamicLoader
// (tests/fakes/fake_dynamic_loader.h) on a machine with no CUDA at all.
//
// Handles are never closed: CUDA libraries register atexit handlers and
// threads, and unloading them while the process runs is unsafe. A handle
// stays valid for the life of the process. The real loader is thread-safe
// (glibc serialises dlopen and keeps dlerror per thread); fakes need not be.
#pragma once

#include <string>
#include <vector>

#include "status/expected.h"

namespace ortgpu::gpu {

// An opaque handle from Open(). Never null when returned OK.
using LibraryHandle = void*;

// RTLD_LOCAL or RTLD_GLOBAL. Global makes the library's symbols available to
// libraries opened later (needed when preloading CUDA libraries for the EP).
enum class SymbolScope { kLocal, kGlobal };

class DynamicLoader {
 public:
  virtual ~DynamicLoader() = default;

  // dlopen(name_or_path, RTLD_NOW | scope). A bare soname is searched the way
  // the dynamic linker does; a path containing '/' is opened as is.
  // Errors: Unavailable with the dlerror() text ("libcudnn.so.9: cannot open
  // shared object file: No such file or directory").
  [[nodiscard]] virtual Expected<LibraryHandle> Open(const std::string& name_or_path,
                                                     SymbolScope scope) = 0;
  // dlsym. NotFound with dlerror() text when the library lacks it.
  // REQUIRES: handle came from Open() of this loader.
  [[nodiscard]] virtual Expected<void*> Symbol(LibraryHandle handle, const std::string& name) = 0;
  // The file actually mapped for `handle` (dlinfo RTLD_DI_LINKMAP l_name).
  // REQUIRES: handle came from Open() of this loader.
  [[nodiscard]] virtual Expected<std::string> PathOf(LibraryHandle handle) = 0;
  // Paths of every object mapped in the process (dl_iterate_phdr), main
  // program excluded, in load order.
  virtual std::vector<std::string> LoadedLibraries() = 0;
};

// The process's real dynamic loader. Never null.
DynamicLoader& RealDynamicLoader();

}  // namespace ortgpu::gpu
