// SharedMemoryRegistry: Triton's system and CUDA shared memory extensions.
// A client on the same machine creates a POSIX shared memory object
// (shm_open KEY) or device memory with a CUDA IPC handle
// (cudaIpcGetMemHandle), registers it under a name (system: key, offset,
// byte size; CUDA: the raw handle, the GPU, byte size), and then names that
// region instead of sending tensor bytes: inputs are read from it and
// outputs written into it. A system region's inputs are read in place (the
// tensor borrows the mapped bytes). A CUDA region's fixed-size inputs stay
// on the device: the tensor carries a DeviceView (the region's device
// address at the offset, its GPU, the region as owner) and no host bytes,
// and a GPU instance joins them into its batch device to device
// (SessionRunner); whatever needs host bytes of such a tensor (a CPU
// instance, an unbatched model, a batch joined in host memory) copies them
// to the host once (DeviceView::to_host, through gpu::CudaIpc). A CUDA
// region's BYTES (string) inputs are copied to the host once, as strings
// are parsed on the host. Outputs placed in a CUDA region are resolved to
// device memory too (ResolveDeviceOutputs): a GPU batch whose requests all
// want an output there writes it device to device and returns a
// placeholder, which WriteSharedMemoryOutputs only records; any other
// output is written into the region host to device, through the
// gpu::CudaIpc seam (docs/SERVING.md says which paths are zero-copy).
//
// Region names are one namespace for both kinds, as in Triton. A region
// stays mapped while any tensor still borrows it, even once it is
// unregistered. Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/cuda_ipc.h"
#include "serve/inference.h"
#include "status/expected.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

struct SharedMemoryRegionInfo {
  std::string name;
  std::string key;  // the shm_open name (system regions)
  uint64_t offset = 0;
  uint64_t byte_size = 0;
  int device_id = -1;  // the GPU of a CUDA region; -1: a system region
};

enum class SharedMemoryKind { kSystem, kCuda };

class SharedMemoryRegistry {
 public:
  // `cuda` opens CUDA regions; null: libcuda's driver API, loaded when the
  // first CUDA region is registered.
  explicit SharedMemoryRegistry(std::shared_ptr<gpu::CudaIpc> cuda = nullptr) : cuda_(std::move(cuda)) {}
  ~SharedMemoryRegistry();
  // The IPC that CUDA regions registered from now on are opened with (a
  // fake in tests).
  void SetCudaIpc(std::shared_ptr<gpu::CudaIpc> cuda) {
    MutexLock lock(&mu_);
    cuda_ = std::move(cuda);
  }

  // Bytes of a registered region, kept mapped by `owner`.
  struct View {
    std::shared_ptr<const void> owner;
    uint8_t* data = nullptr;
    size_t size = 0;
  };

  // Maps [offset, offset + byte_size) of the object `key` as `name`.
  // AlreadyExists for a name in use; NotFound when the object cannot be
  // opened; InvalidArgument when the range does not fit in it.
  Status Register(const std::string& name, const std::string& key, uint64_t offset, uint64_t byte_size);
  // Opens `raw_handle` (gpu::kCudaIpcHandleBytes bytes) on GPU `device_id`
  // as `name`, `byte_size` bytes. AlreadyExists for a name in use;
  // InvalidArgument for a handle of another size, a zero size or a GPU the
  // server cannot see; Unavailable without a driver.
  Status RegisterCuda(const std::string& name, const std::string& raw_handle, int device_id, uint64_t byte_size);
  // Forgets `name` of that kind ("" = every region of it). A name not
  // registered is no error.
  void Unregister(const std::string& name, SharedMemoryKind kind = SharedMemoryKind::kSystem);
  // Every region of that kind ("") or the one named; NotFound for an
  // unknown name (in Triton's words).
  Expected<std::vector<SharedMemoryRegionInfo>> Regions(const std::string& name,
                                                        SharedMemoryKind kind = SharedMemoryKind::kSystem) const;
  // `size` bytes at `offset` inside region `name`, in host memory: a system
  // region's mapped bytes, a CUDA region's copied to the host (the view
  // owns the copy). NotFound for an unknown region; InvalidArgument when the
  // range is outside it.
  Expected<View> Find(const std::string& name, uint64_t offset, uint64_t size) const;
  // The device memory of `size` bytes at `offset` inside CUDA region
  // `name`, kept mapped by the view's owner; nullopt for a system region.
  // Errors as Find's.
  Expected<std::optional<DeviceView>> FindOnDevice(const std::string& name, uint64_t offset, uint64_t size) const;
  // Writes `bytes` at `offset` into region `name` (a CUDA region: host to
  // device). Errors as Find's.
  Status Write(const std::string& name, uint64_t offset, std::string_view bytes) const;

 private:
  struct Region;
  Expected<std::shared_ptr<Region>> Lookup(const std::string& name, uint64_t offset, uint64_t size) const;
  mutable Mutex mu_;
  std::shared_ptr<gpu::CudaIpc> cuda_ GUARDED_BY(mu_);  // made on first use
  std::map<std::string, std::shared_ptr<Region>> regions_ GUARDED_BY(mu_);
};

// Where a tensor lives when its parameters name a region
// (shared_memory_region, shared_memory_offset, shared_memory_byte_size).
struct SharedMemoryRef {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// Reads the shared memory parameters of a tensor (kept as JSON text, as the
// core keeps parameters). nullopt when it names no region; InvalidArgument,
// naming `where`, when the region has no byte size or a value has the
// wrong type.
Expected<std::optional<SharedMemoryRef>> SharedMemoryRefFromParameters(const std::map<std::string, std::string>& p,
                                                                       const std::string& where);

// A tensor's bytes as they travel: raw for fixed-size types, Triton's BYTES
// serialisation (4-byte little-endian length, then the bytes) for strings.
std::string SerializedTensorBytes(const Tensor& t);
// Parses Triton's BYTES serialisation into t.strings; InvalidArgument naming
// the tensor when an element is cut short.
Status ParseSerializedStrings(std::string_view raw, Tensor& t);

// Points the data of every input of request.shared_memory_inputs at its
// region (BYTES inputs are parsed from it; a CUDA region's other inputs
// become device views, Tensor::device). NotFound for an unknown region;
// InvalidArgument when the byte size does not match the input's shape.
Status ReadSharedMemoryInputs(InferRequest& request, const SharedMemoryRegistry& shm);

// Fills request.device_outputs: every requested output placed in a CUDA
// region (and not asked for classification), as its region's device memory.
// Errors as Find's.
Status ResolveDeviceOutputs(InferRequest& request, const SharedMemoryRegistry& shm);

// Writes every output that `requested` places in a shared memory region
// into it and records the region in response.output_parameters (the
// encoders then send it without data). An output the instance already
// wrote into its CUDA region (Tensor::device set, no bytes) is only
// recorded. InvalidArgument when an output is larger than its region's
// byte size.
Status WriteSharedMemoryOutputs(InferResponse& response, const std::vector<RequestedOutput>& requested,
                                const SharedMemoryRegistry& shm);

}  // namespace ortgpu::serve
