#include "gpu/cuda_ipc.h"

#include <cstring>
#include <mutex>
#include <string>

namespace ortgpu::gpu {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
struct CUipcMemHandle {
  char reserved[kCudaIpcHandleBytes];
};
constexpr unsigned kLazyEnablePeerAccess = 0x1;  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS

class DriverCudaIpc final : public CudaIpc {
 public:
  DriverCudaIpc(DynamicLoader& loader, std::string library) : loader_(loader), library_(std::move(library)) {}

  Expected<uint64_t> Open(const std::string& handle, int device) override {
    if (handle.size() != kCudaIpcHandleBytes) {
      return InvalidArgument("a CUDA IPC handle has " + std::to_string(kCudaIpcHandleBytes) + " bytes, not " +
                             std::to_string(handle.size()) +
                             ": send the bytes of cudaIpcGetMemHandle's cudaIpcMemHandle_t");
    }
    CUipcMemHandle h;
    std::memcpy(h.reserved, handle.data(), kCudaIpcHandleBytes);
    uint64_t address = 0;
    Status opened = InContext(device, [&] { return ipc_open_(&address, h, kLazyEnablePeerAccess); }, "cuIpcOpenMemHandle");
    if (!opened.ok() && opened.code() == Code::kInternal) {
      return Status(Code::kInvalidArgument,
                    opened.message() + ": send the handle cudaIpcGetMemHandle gave for memory that is still allocated, "
                                       "from a process that is still running, with the device_id of the GPU it lives on");
    }
    ORTGPU_RETURN_IF_ERROR(opened);
    return address;
  }

  Status Close(uint64_t address, int device) override {
    return InContext(device, [&] { return ipc_close_(address); }, "cuIpcCloseMemHandle");
  }

  Status ToHost(void* dst, uint64_t src, size_t bytes, int device) override {
    return InContext(device, [&] { return dtoh_(dst, src, bytes); }, "cuMemcpyDtoH");
  }

  Status ToDevice(uint64_t dst, const void* src, size_t bytes, int device) override {
    return InContext(device, [&] { return htod_(dst, src, bytes); }, "cuMemcpyHtoD");
  }

  Expected<uint64_t> Allocate(size_t bytes, int device) override {
    uint64_t address = 0;
    Status st = InContext(device, [&] { return alloc_(&address, bytes); }, "cuMemAlloc");
    if (!st.ok() && st.code() == Code::kInternal) {
      return ResourceExhausted(st.message() + ": GPU " + std::to_string(device) + " has no room for " +
                               std::to_string(bytes) + " bytes");
    }
    ORTGPU_RETURN_IF_ERROR(st);
    return address;
  }

  Status Free(uint64_t address, int device) override {
    return InContext(device, [&] { return free_(address); }, "cuMemFree");
  }

  Expected<std::string> ExportHandle(uint64_t address, int device) override {
    CUipcMemHandle h;
    ORTGPU_RETURN_IF_ERROR(InContext(device, [&] { return ipc_get_(&h, address); }, "cuIpcGetMemHandle"));
    return std::string(h.reserved, kCudaIpcHandleBytes);
  }

 private:
  Status Load() {
    std::lock_guard lock(mu_);
    if (loaded_) return load_status_;
    loaded_ = true;
    auto lib = OpenLibrary(loader_, library_, SymbolScope::kLocal);
    if (!lib.ok()) {
      load_status_ = Unavailable("CUDA shared memory needs the NVIDIA driver: " + lib.status().message());
      return load_status_;
    }
    auto missing = ResolveSymbols(loader_, lib->handle,
                                  {FunctionSlot("cuInit", init_), FunctionSlot("cuDeviceGet", device_get_),
                                   FunctionSlot("cuDevicePrimaryCtxRetain", retain_),
                                   FunctionSlot("cuCtxPushCurrent_v2", push_), FunctionSlot("cuCtxPopCurrent_v2", pop_),
                                   FunctionSlot("cuIpcOpenMemHandle_v2", ipc_open_),
                                   FunctionSlot("cuIpcCloseMemHandle", ipc_close_),
                                   FunctionSlot("cuMemcpyDtoH_v2", dtoh_), FunctionSlot("cuMemcpyHtoD_v2", htod_),
                                   FunctionSlot("cuMemAlloc_v2", alloc_), FunctionSlot("cuMemFree_v2", free_),
                                   FunctionSlot("cuIpcGetMemHandle", ipc_get_)});
    load_status_ = MissingSymbolsError(lib->path, "CUDA IPC", missing, "CUDA shared memory needs a newer NVIDIA driver");
    if (load_status_.ok() && init_(0) != 0) load_status_ = Unavailable("cuInit failed: no usable GPU for CUDA shared memory");
    return load_status_;
  }

  template <typename Call>
  Status InContext(int device, Call call, const char* what) {
    ORTGPU_RETURN_IF_ERROR(Load());
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    if (device_get_(&dev, device) != 0 || retain_(&ctx, dev) != 0) {
      return InvalidArgument("GPU " + std::to_string(device) +
                             " is not visible to the server (CUDA_VISIBLE_DEVICES?), so its CUDA shared memory cannot "
                             "be used");
    }
    // The primary context stays retained: ORT holds it for the process's
    // life anyway, and releasing it here could tear it down under a copy.
    if (push_(ctx) != 0) return Internal("cannot make GPU " + std::to_string(device) + "'s context current");
    const CUresult r = call();
    CUcontext popped = nullptr;
    pop_(&popped);
    if (r != 0) {
      return Internal(std::string(what) + " on GPU " + std::to_string(device) + " failed with CUDA error " +
                      std::to_string(r));
    }
    return Status::Ok();
  }

  DynamicLoader& loader_;
  const std::string library_;
  std::mutex mu_;
  bool loaded_ = false;  // guarded by mu_
  Status load_status_;   // guarded by mu_; read after Load returns
  CUresult (*init_)(unsigned) = nullptr;
  CUresult (*device_get_)(CUdevice*, int) = nullptr;
  CUresult (*retain_)(CUcontext*, CUdevice) = nullptr;
  CUresult (*push_)(CUcontext) = nullptr;
  CUresult (*pop_)(CUcontext*) = nullptr;
  CUresult (*ipc_open_)(uint64_t*, CUipcMemHandle, unsigned) = nullptr;
  CUresult (*ipc_close_)(uint64_t) = nullptr;
  CUresult (*dtoh_)(void*, uint64_t, size_t) = nullptr;
  CUresult (*htod_)(uint64_t, const void*, size_t) = nullptr;
  CUresult (*alloc_)(uint64_t*, size_t) = nullptr;
  CUresult (*free_)(uint64_t) = nullptr;
  CUresult (*ipc_get_)(CUipcMemHandle*, uint64_t) = nullptr;
};

}  // namespace

std::shared_ptr<CudaIpc> MakeDriverCudaIpc(DynamicLoader& loader, std::string library) {
  return std::make_shared<DriverCudaIpc>(loader, std::move(library));
}

}  // namespace ortgpu::gpu
