// bare_run_loop: the reference `ortgpu bench` is measured against. A plain
// loop of Session::Run (or BoundRunner::Run for device outputs) timed with
// steady_clock, with none of bench's machinery (workers, statistics, progress,
// resource sampling). docs/BENCHMARKS.md compares the two p50s.
//
//   ortgpu_bare_run_loop MODEL cpu|cuda host|bound BATCH ITERATIONS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ort/io_binding.h"
#include "ort/session.h"

using namespace ortgpu;

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL cpu|cuda host|bound BATCH ITERATIONS\n", argv[0]);
    return 2;
  }
  SessionOptions so;
  so.provider = std::string(argv[2]) == "cuda" ? Provider::kCuda : Provider::kCpu;
  auto mode = ParseIoMode(argv[3]);
  const int64_t batch = std::atoll(argv[4]);
  const int iterations = std::atoi(argv[5]);
  auto session = Session::Load(argv[1], so);
  if (!session.ok() || !mode.ok()) {
    std::fprintf(stderr, "%s\n", (session.ok() ? mode.status() : session.status()).ToString().c_str());
    return 1;
  }
  std::vector<Tensor> inputs;
  for (const auto& in : (*session)->inputs()) {
    std::vector<int64_t> shape = in.shape;
    for (auto& d : shape) d = d < 0 ? batch : d;
    inputs.push_back(Tensor::Zeros(in.name, in.dtype, shape));
  }
  BoundRunnerOptions bo;
  bo.mode = *mode;
  auto runner = BoundRunner::Create(**session, inputs, bo);
  if (!runner.ok()) {
    std::fprintf(stderr, "%s\n", runner.status().ToString().c_str());
    return 1;
  }
  for (int i = 0; i < 10; ++i) (void)(*runner)->Run().ok();
  std::vector<double> ms;
  ms.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = (*runner)->Run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  std::sort(ms.begin(), ms.end());
  std::printf("bare loop p50 %.4f ms (%d runs, batch %lld, %s, %s)\n", ms[ms.size() / 2], iterations,
              static_cast<long long>(batch), argv[2], argv[3]);
  return 0;
}
