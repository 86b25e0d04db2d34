// SharedMemoryRegistry: Triton's system shared memory extension. A client
// on the same machine creates a POSIX shared memory object (shm_open KEY),
// registers a region of it under a name (offset, byte size), and then names
// that region instead of sending tensor bytes: inputs are read from it (the
// tensor borrows the mapped bytes, no copy) and outputs are written into it.
//
// A region stays mapped while any tensor still borrows it, even once it is
// unregistered. Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve/inference.h"
#include "status/expected.h"

namespace ortgpu::serve {

struct SharedMemoryRegionInfo {
  std::string name;
  std::string key;  // the shm_open name
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

class SharedMemoryRegistry {
 public:
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
  // Forgets `name` ("" = every region). A name not registered is no error.
  void Unregister(const std::string& name);
  // Every region ("") or the one named; NotFound for an unknown name.
  Expected<std::vector<SharedMemoryRegionInfo>> Regions(const std::string& name) const;
  // `size` bytes at `offset` inside region `name`. NotFound for an unknown
  // region; InvalidArgument when the range is outside it.
  Expected<View> Find(const std::string& name, uint64_t offset, uint64_t size) const;

 private:
  struct Region;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Region>> regions_;  // guarded by mu_
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
// region (BYTES inputs are parsed from it). NotFound for an unknown region;
// InvalidArgument when the byte size does not match the input's shape.
Status ReadSharedMemoryInputs(InferRequest& request, const SharedMemoryRegistry& shm);

// Writes every output that `requested` places in a shared memory region
// into it and records the region in response.output_parameters (the
// encoders then send it without data). InvalidArgument when an output is
// larger than its region's byte size.
Status WriteSharedMemoryOutputs(InferResponse& response, const std::vector<RequestedOutput>& requested,
                                const SharedMemoryRegistry& shm);

}  // namespace ortgpu::serve
