// FakeDeviceMemory: ortgpu::DeviceMemory over host memory. "Device"
// addresses are host pointers (as FakeCudaIpc's are), so a CPU session can
// run on a "device" batch buffer; every operation is counted by kind, so a
// test can assert that a batch of device rows made no host copy.
// Thread-safe.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ort/device_memory.h"

namespace ortgpu::testing {

class FakeDeviceMemory final : public DeviceMemory {
 public:
  struct Counts {
    int allocations = 0;
    int to_device = 0;   // host to device
    int to_host = 0;     // device to host
    int on_device = 0;   // device to device, one GPU
    int peer = 0;        // device to device, two GPUs
    int zeroed = 0;
    size_t to_device_bytes = 0;
    size_t to_host_bytes = 0;
    size_t on_device_bytes = 0;
  };
  Counts counts() const {
    std::lock_guard lock(mu_);
    return counts_;
  }
  void Reset() {
    std::lock_guard lock(mu_);
    counts_ = {};
  }
  // Peer copies between different GPUs fail (as when the driver refuses).
  void RefusePeerCopies() {
    std::lock_guard lock(mu_);
    refuse_peer_ = true;
  }

  bool host_addressable() const override { return true; }
  Expected<uint64_t> Allocate(size_t bytes, int) override {
    std::lock_guard lock(mu_);
    ++counts_.allocations;
    auto buffer = std::make_unique<std::vector<uint8_t>>(bytes, 0xAB);  // not zero: padding must be zeroed
    const auto address = reinterpret_cast<uint64_t>(buffer->data());
    buffers_[address] = std::move(buffer);
    return address;
  }
  void Free(uint64_t address, int) override {
    std::lock_guard lock(mu_);
    buffers_.erase(address);
  }
  Status ToDevice(uint64_t dst, const void* src, size_t bytes, int) override {
    Count([&](Counts& c) { ++c.to_device; c.to_device_bytes += bytes; });
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return Status::Ok();
  }
  Status ToHost(void* dst, uint64_t src, size_t bytes, int) override {
    Count([&](Counts& c) { ++c.to_host; c.to_host_bytes += bytes; });
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return Status::Ok();
  }
  Status DeviceToDevice(uint64_t dst, int dst_device, uint64_t src, int src_device, size_t bytes) override {
    {
      std::lock_guard lock(mu_);
      if (dst_device != src_device && refuse_peer_) {
        return InvalidArgument("the input is in device memory on GPU " + std::to_string(src_device) +
                               " and the model runs on GPU " + std::to_string(dst_device) +
                               ", and the copy between them failed");
      }
      if (dst_device == src_device) {
        ++counts_.on_device;
      } else {
        ++counts_.peer;
      }
      counts_.on_device_bytes += bytes;
    }
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return Status::Ok();
  }
  Status Zero(uint64_t dst, size_t bytes, int) override {
    Count([](Counts& c) { ++c.zeroed; });
    std::memset(reinterpret_cast<void*>(dst), 0, bytes);
    return Status::Ok();
  }
  Status Wait(int) override { return Status::Ok(); }
  // Records the calling thread's current device (see bindings()); fails
  // as cudaSetDevice does for an ordinal past visible_gpus (when set).
  Status SetCurrentDevice(int device) override {
    std::lock_guard lock(mu_);
    if (visible_gpus_ >= 0 && (device < 0 || device >= visible_gpus_)) {
      return InvalidArgument("GPU " + std::to_string(device) + " is not visible to the server");
    }
    bindings_.push_back({std::this_thread::get_id(), device});
    return Status::Ok();
  }
  // Only GPUs 0..n-1 exist for SetCurrentDevice.
  void SetVisibleGpus(int n) {
    std::lock_guard lock(mu_);
    visible_gpus_ = n;
  }
  // Every SetCurrentDevice that succeeded, in order: the thread and the GPU.
  std::vector<std::pair<std::thread::id, int>> bindings() const {
    std::lock_guard lock(mu_);
    return bindings_;
  }

 private:
  template <typename F>
  void Count(F f) {
    std::lock_guard lock(mu_);
    f(counts_);
  }
  mutable std::mutex mu_;
  Counts counts_;
  bool refuse_peer_ = false;
  int visible_gpus_ = -1;  // -1: any device
  std::vector<std::pair<std::thread::id, int>> bindings_;
  std::map<uint64_t, std::unique_ptr<std::vector<uint8_t>>> buffers_;
};

}  // namespace ortgpu::testing
