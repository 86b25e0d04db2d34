#include "sys/host_allocator.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fakes/fake_environment.h"

namespace ortgpu {
namespace {

using testing::FakeEnvironment;

// What a served request does to the heap: a thread allocates and fills a
// request's bytes (ResNet-50's 602 KB tensor), several are in flight, and
// they are freed when answered. Returns the minor page faults of the last
// `measured` rounds, in a child process (the thresholds are process-wide and
// cannot be undone), configured first when `configure`.
long FaultsPerRequestLoop(bool configure, int rounds, int measured) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (configure) ConfigureHostAllocator(FakeEnvironment{});
    long faults = 0;
    std::thread worker([&] {
      constexpr size_t kRequest = 3 * 224 * 224 * 4;
      std::vector<void*> in_flight(8);
      rusage before{};
      for (int r = 0; r < rounds; ++r) {
        if (r == rounds - measured) getrusage(RUSAGE_SELF, &before);
        for (auto& p : in_flight) {
          p = std::malloc(kRequest);
          std::memset(p, r, kRequest);
        }
        for (auto* p : in_flight) std::free(p);
      }
      rusage after{};
      getrusage(RUSAGE_SELF, &after);
      faults = after.ru_minflt - before.ru_minflt;
    });
    worker.join();
    (void)!write(fds[1], &faults, sizeof faults);
    _exit(0);
  }
  close(fds[1]);
  long faults = -1;
  if (read(fds[0], &faults, sizeof faults) != sizeof faults) faults = -1;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return faults;
}

TEST(HostAllocatorTest, RequestSizedBlocksAreReusedWithoutPageFaults) {
  // Without the thresholds glibc trims the heap after each round and every
  // page of every request faults again (about 150 faults a request).
  EXPECT_GT(FaultsPerRequestLoop(/*configure=*/false, 40, 20), 20 * 8 * 100);
  // With them the freed blocks are reused: no faults after the first rounds.
  EXPECT_LT(FaultsPerRequestLoop(/*configure=*/true, 40, 20), 20);
}

// The process's resident size in KiB.
long ResidentKiB() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

TEST(HostAllocatorTest, ReleaseGivesFreedHeapsBackAfterALargeRelease) {
  // What an unload does: a thread frees 200 MB of blocks it allocated
  // between small ones that live on (as a session's buffers sit between
  // what the process keeps); freed, they stay resident until
  // ReleaseFreeHostMemory gives their pages back.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    ConfigureHostAllocator(FakeEnvironment{});
    long sizes[3] = {0, 0, 0};
    std::vector<void*> kept(200);
    std::thread session([&] {
      std::vector<void*> blocks(200);
      for (size_t i = 0; i < blocks.size(); ++i) {
        blocks[i] = std::malloc(1 << 20);
        std::memset(blocks[i], 1, 1 << 20);
        kept[i] = std::malloc(64);
      }
      sizes[0] = ResidentKiB();
      for (auto* p : blocks) std::free(p);
    });
    session.join();
    sizes[1] = ResidentKiB();
    ReleaseFreeHostMemory();
    sizes[2] = ResidentKiB();
    (void)!write(fds[1], sizes, sizeof sizes);
    _exit(0);
  }
  close(fds[1]);
  long sizes[3] = {-1, -1, -1};
  ASSERT_EQ(read(fds[0], sizes, sizeof sizes), static_cast<ssize_t>(sizeof sizes));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_GT(sizes[1], sizes[0] - 20 * 1024) << "freed blocks are kept for reuse: " << sizes[0] << " " << sizes[1];
  EXPECT_LT(sizes[2], sizes[0] - 150 * 1024) << "resident KiB: " << sizes[0] << " in use, " << sizes[1]
                                             << " freed, " << sizes[2] << " released";
}

TEST(HostAllocatorTest, SaysWhatItSet) {
  const auto s = ConfigureHostAllocator(FakeEnvironment{});
  EXPECT_TRUE(s.applied);
  EXPECT_EQ(s.mmap_threshold, size_t{32} << 20);
  EXPECT_EQ(s.trim_threshold, size_t{256} << 20);
  EXPECT_NE(s.summary.find("kept for reuse"), std::string::npos);
  EXPECT_NE(s.summary.find("GLIBC_TUNABLES"), std::string::npos);
}

TEST(HostAllocatorTest, TheUsersMallocTunablesWin) {
  const auto s = ConfigureHostAllocator(
      FakeEnvironment{{"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576"}});
  EXPECT_FALSE(s.applied);
  EXPECT_EQ(s.summary, "host allocator: left as GLIBC_TUNABLES sets it (glibc.malloc.trim_threshold=1048576)");
  // Tunables that do not touch malloc change nothing of ours.
  EXPECT_TRUE(ConfigureHostAllocator(FakeEnvironment{{"GLIBC_TUNABLES", "glibc.rtld.nns=4"}}).applied);
}

}  // namespace
}  // namespace ortgpu
