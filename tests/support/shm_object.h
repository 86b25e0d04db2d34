// ShmObject: a POSIX shared memory object (shm_open) of a given size, mapped
// for the test and unlinked at the end: the client side of Triton's system
// shared memory extension in tests. Not thread-safe.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace ortgpu::testing {

class ShmObject {
 public:
  explicit ShmObject(size_t size) : size_(size) {
    static std::atomic<int> counter{0};
    key_ = "/ortgpu-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    const int fd = ::shm_open(key_.c_str(), O_CREAT | O_RDWR, 0600);
    if (fd < 0) return;
    if (::ftruncate(fd, static_cast<off_t>(size)) == 0) {
      void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) base_ = static_cast<uint8_t*>(p);
    }
    ::close(fd);
  }
  ~ShmObject() {
    if (base_ != nullptr) ::munmap(base_, size_);
    ::shm_unlink(key_.c_str());
  }
  ShmObject(const ShmObject&) = delete;
  ShmObject& operator=(const ShmObject&) = delete;

  bool ok() const { return base_ != nullptr; }
  const std::string& key() const { return key_; }
  uint8_t* bytes() { return base_; }

 private:
  std::string key_;
  size_t size_;
  uint8_t* base_ = nullptr;
};

}  // namespace ortgpu::testing
