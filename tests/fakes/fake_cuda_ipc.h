// FakeCudaIpc: gpu::CudaIpc over host memory. A test "exports" a buffer
// with Export (which gives the 64-byte handle a client would send); Open
// finds it by handle, and copies go to and from the buffer, so a CUDA shared
// memory region can be exercised end to end without a GPU. Thread-safe.
#pragma once

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/cuda_ipc.h"

namespace ortgpu::testing {

class FakeCudaIpc final : public gpu::CudaIpc {
 public:
  // Registers `bytes` of "device memory" on GPU `device`; returns its handle.
  std::string Export(size_t bytes, int device) {
    std::lock_guard lock(mu_);
    std::string handle(gpu::kCudaIpcHandleBytes, '\0');
    const uint64_t id = ++next_;
    std::memcpy(handle.data(), &id, sizeof id);
    buffers_[handle] = {std::vector<uint8_t>(bytes), device};
    return handle;
  }
  // The exported buffer behind `handle`.
  std::vector<uint8_t>& Memory(const std::string& handle) {
    std::lock_guard lock(mu_);
    return buffers_.at(handle).bytes;
  }
  int open_count() const {
    std::lock_guard lock(mu_);
    return opened_;
  }
  // Copies made so far from "device" memory to the host, and back.
  int to_host_count() const {
    std::lock_guard lock(mu_);
    return to_host_;
  }
  int to_device_count() const {
    std::lock_guard lock(mu_);
    return to_device_;
  }

  Expected<uint64_t> Open(const std::string& handle, int device) override {
    std::lock_guard lock(mu_);
    if (handle.size() != gpu::kCudaIpcHandleBytes) return InvalidArgument("a CUDA IPC handle has 64 bytes");
    auto it = buffers_.find(handle);
    if (it == buffers_.end()) return Internal("cuIpcOpenMemHandle on GPU 0 failed with CUDA error 1");
    if (it->second.device != device) return Internal("cuIpcOpenMemHandle: the memory lives on another GPU");
    ++opened_;
    return reinterpret_cast<uint64_t>(it->second.bytes.data());
  }
  Status Close(uint64_t, int) override {
    std::lock_guard lock(mu_);
    --opened_;
    return Status::Ok();
  }
  Status ToHost(void* dst, uint64_t src, size_t bytes, int) override {
    {
      std::lock_guard lock(mu_);
      ++to_host_;
    }
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return Status::Ok();
  }
  Status ToDevice(uint64_t dst, const void* src, size_t bytes, int) override {
    {
      std::lock_guard lock(mu_);
      ++to_device_;
    }
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return Status::Ok();
  }
  // The client's side: Allocate makes an exported buffer, ExportHandle finds
  // its handle by address, Free forgets it.
  Expected<uint64_t> Allocate(size_t bytes, int device) override {
    const std::string handle = Export(bytes, device);
    std::lock_guard lock(mu_);
    ++allocated_;
    return reinterpret_cast<uint64_t>(buffers_.at(handle).bytes.data());
  }
  Status Free(uint64_t address, int) override {
    std::lock_guard lock(mu_);
    for (auto it = buffers_.begin(); it != buffers_.end(); ++it) {
      if (reinterpret_cast<uint64_t>(it->second.bytes.data()) == address) {
        buffers_.erase(it);
        --allocated_;
        return Status::Ok();
      }
    }
    return InvalidArgument("cuMemFree of an address never allocated");
  }
  Expected<std::string> ExportHandle(uint64_t address, int device) override {
    std::lock_guard lock(mu_);
    for (const auto& [handle, buffer] : buffers_) {
      if (reinterpret_cast<uint64_t>(buffer.bytes.data()) == address && buffer.device == device) return handle;
    }
    return InvalidArgument("cuIpcGetMemHandle of an address never allocated on that GPU");
  }
  // Buffers Allocate made and Free has not freed.
  int allocated_count() const {
    std::lock_guard lock(mu_);
    return allocated_;
  }

 private:
  struct Buffer {
    std::vector<uint8_t> bytes;
    int device = 0;
  };
  mutable std::mutex mu_;
  uint64_t next_ = 0;
  int opened_ = 0;
  int to_host_ = 0;
  int to_device_ = 0;
  int allocated_ = 0;
  std::map<std::string, Buffer> buffers_;
};

}  // namespace ortgpu::testing
