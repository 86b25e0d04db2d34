#include "bench/runner.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "bench/resources.h"

namespace ortgpu::bench {
namespace {

struct Sample {
  int64_t end_ns;
  double ms;
};

// Shared state of one Measure call. Workers claim runs from `claimed` so the
// total is exact whatever the thread count; `stop` ends them all early.
struct Shared {
  int64_t iterations = 0;
  int64_t deadline_ns = 0;  // 0: count-bound
  std::atomic<int64_t> claimed{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  Status error;  // guarded by mu; the first failure
};

bool Claim(Shared& s, const Clock& clock) {
  if (s.stop.load(std::memory_order_relaxed)) return false;
  if (s.deadline_ns > 0) return clock.NowNanos() < s.deadline_ns;
  return s.claimed.fetch_add(1, std::memory_order_relaxed) < s.iterations;
}

void Fail(Shared& s, Status st) {
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.error.ok()) s.error = std::move(st);
  s.stop = true;
}

void TimedLoop(BoundRunner& runner, Shared& s, const Clock& clock, std::vector<Sample>& out) {
  while (Claim(s, clock)) {
    const int64_t t0 = clock.NowNanos();
    Status st = runner.Run();
    const int64_t t1 = clock.NowNanos();
    if (!st.ok()) {
      Fail(s, std::move(st));
      return;
    }
    out.push_back({t1, static_cast<double>(t1 - t0) * 1e-6});
    s.done.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

Expected<Measurement> Measure(const std::vector<BoundRunner*>& workers, const LoadOptions& load, const Clock& clock,
                              const ProgressFn& progress) {
  if (workers.empty()) return InvalidArgument("no workers to measure");
  if (load.iterations < 1 && load.duration_s <= 0) {
    return InvalidArgument("give a positive --iterations or --duration");
  }
  Measurement m;
  // Warm-up, worker by worker: the first run of each allocates, tunes
  // (cudnn_conv_algo_search) or captures a CUDA graph, and must not be timed.
  for (size_t w = 0; w < workers.size(); ++w) {
    for (int i = 0; i < std::max(1, load.warmup); ++i) {
      const int64_t t0 = clock.NowNanos();
      Status st = workers[w]->Run();
      if (!st.ok()) return st.WithContext("warm-up run");
      if (w == 0 && i == 0) m.first_run_ms = static_cast<double>(clock.NowNanos() - t0) * 1e-6;
    }
  }
  Shared shared;
  shared.iterations = load.duration_s > 0 ? 0 : load.iterations;
  std::vector<std::vector<Sample>> samples(workers.size());
  const size_t reserve = load.duration_s > 0 ? 4096 : static_cast<size_t>(load.iterations);
  for (auto& s : samples) s.reserve(reserve);

  const ProcessUsage before = CurrentProcessUsage();
  const int64_t start = clock.NowNanos();
  if (load.duration_s > 0) shared.deadline_ns = start + static_cast<int64_t>(load.duration_s * 1e9);
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers.size(); ++w) {
    try {
      threads.emplace_back([&, w] { TimedLoop(*workers[w], shared, clock, samples[w]); });
    } catch (const std::system_error& e) {
      // The threads started so far must be joined before `threads` goes out
      // of scope (a joinable std::thread's destructor aborts the process).
      Fail(shared, ResourceExhausted("cannot start worker thread " + std::to_string(w + 1) + " of " +
                                     std::to_string(workers.size()) + " (" + e.what() +
                                     "); lower --concurrency or raise the thread and memory limits (ulimit -u, -v)"));
      for (auto& t : threads) t.join();
      std::lock_guard<std::mutex> lock(shared.mu);
      return shared.error;
    }
  }
  if (progress) {
    // Worker 0 runs in slices so the calling thread can report progress
    // between them without a separate timer thread.
    int64_t next_report = start;
    auto fraction = [&] {
      if (shared.deadline_ns > 0) return std::min(1.0, static_cast<double>(clock.NowNanos() - start) / (load.duration_s * 1e9));
      return std::min(1.0, static_cast<double>(shared.done.load()) / static_cast<double>(load.iterations));
    };
    while (Claim(shared, clock)) {
      const int64_t t0 = clock.NowNanos();
      Status st = workers[0]->Run();
      const int64_t t1 = clock.NowNanos();
      if (!st.ok()) {
        Fail(shared, std::move(st));
        break;
      }
      samples[0].push_back({t1, static_cast<double>(t1 - t0) * 1e-6});
      shared.done.fetch_add(1, std::memory_order_relaxed);
      if (t1 >= next_report) {
        progress(fraction());
        next_report = t1 + 100'000'000;
      }
    }
  } else {
    TimedLoop(*workers[0], shared, clock, samples[0]);
  }
  for (auto& t : threads) t.join();
  const int64_t end = clock.NowNanos();
  if (progress) progress(1.0);
  {
    std::lock_guard<std::mutex> lock(shared.mu);
    if (!shared.error.ok()) return shared.error;
  }
  m.wall_s = static_cast<double>(end - start) * 1e-9;
  m.cpu_s = CurrentProcessUsage().cpu_s - before.cpu_s;
  std::vector<Sample> all;
  for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end(), [](const Sample& a, const Sample& b) { return a.end_ns < b.end_ns; });
  m.samples_ms.reserve(all.size());
  for (const auto& s : all) m.samples_ms.push_back(s.ms);
  return m;
}

}  // namespace ortgpu::bench
