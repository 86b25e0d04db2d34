#include "ort/thread_streams.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

namespace ortgpu::ort_internal {
namespace {

// A cudart stand-in: streams are numbered handles; what was made and
// destroyed is recorded.
std::mutex mu;
std::set<uintptr_t> live;
int made = 0, destroyed = 0, refusals = 0;
unsigned last_flags = 0;

int Create(void** stream, unsigned flags) {
  std::lock_guard lock(mu);
  if (refusals > 0) {
    --refusals;
    return 2;  // cudaErrorMemoryAllocation
  }
  last_flags = flags;
  *stream = reinterpret_cast<void*>(static_cast<uintptr_t>(++made) * 16);
  live.insert(reinterpret_cast<uintptr_t>(*stream));
  return 0;
}

int Destroy(void* stream) {
  std::lock_guard lock(mu);
  ++destroyed;
  return live.erase(reinterpret_cast<uintptr_t>(stream)) == 1 ? 0 : 400;  // cudaErrorInvalidResourceHandle
}

void Reset() {
  std::lock_guard lock(mu);
  live.clear();
  made = destroyed = refusals = 0;
}

TEST(ThreadStreamsTest, OneNonBlockingStreamPerDeviceDestroyedWhenTheThreadExits) {
  Reset();
  std::thread worker([] {
    thread_local ThreadStreams streams;
    void* a = streams.Get(0, Create, Destroy);
    EXPECT_NE(a, nullptr);
    EXPECT_EQ(streams.Get(0, Create, Destroy), a);  // kept for the thread's next copies
    void* b = streams.Get(1, Create, Destroy);
    EXPECT_NE(b, a);
    EXPECT_EQ(last_flags, 0x01u);  // cudaStreamNonBlocking
    std::lock_guard lock(mu);
    EXPECT_EQ(live.size(), 2u);
  });
  worker.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(destroyed, 2);
  EXPECT_TRUE(live.empty());
}

TEST(ThreadStreamsTest, ThreadsThatComeAndGoLeaveNoStreamBehind) {
  // A model loaded and unloaded ten times, two instance workers each time.
  Reset();
  for (int load = 0; load < 10; ++load) {
    std::thread w1([] {
      thread_local ThreadStreams streams;
      streams.Get(0, Create, Destroy);
    });
    std::thread w2([] {
      thread_local ThreadStreams streams;
      streams.Get(0, Create, Destroy);
    });
    w1.join();
    w2.join();
  }
  std::lock_guard lock(mu);
  EXPECT_EQ(made, 20);
  EXPECT_TRUE(live.empty());
}

TEST(ThreadStreamsTest, AStreamThatCannotBeMadeIsNullAndTriedAgain) {
  Reset();
  {
    std::lock_guard lock(mu);
    refusals = 1;
  }
  std::thread worker([] {
    ThreadStreams streams;
    EXPECT_EQ(streams.Get(0, Create, Destroy), nullptr);
    EXPECT_NE(streams.Get(0, Create, Destroy), nullptr);
    EXPECT_EQ(ThreadStreams().Get(0, nullptr, nullptr), nullptr);  // cudart not loaded
  });
  worker.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(made, 1);
  EXPECT_TRUE(live.empty());
}

}  // namespace
}  // namespace ortgpu::ort_internal
