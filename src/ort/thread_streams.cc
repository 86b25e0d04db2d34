#include "ort/thread_streams.h"

namespace ortgpu::ort_internal {

ThreadStreams::~ThreadStreams() {
  if (destroy_ == nullptr) return;
  for (const auto& [device, stream] : streams_) {
    if (stream != nullptr) destroy_(stream);
  }
}

void* ThreadStreams::Get(int device, CreateFn create, DestroyFn destroy) {
  constexpr unsigned kCudaStreamNonBlocking = 0x01;
  void*& stream = streams_[device];
  if (stream == nullptr && (create == nullptr || create(&stream, kCudaStreamNonBlocking) != 0)) stream = nullptr;
  if (stream != nullptr && destroy != nullptr) destroy_ = destroy;
  return stream;
}

}  // namespace ortgpu::ort_internal
