// shape_switch: what a change of batch size costs one ORT session, the
// question behind issue 8's "a batch-32 execution takes 66-69 ms instead of
// 7.8 ms once the batcher forms every size". One session runs, on host
// tensors as `serve` does:
//   1. each size of SIZES once after the other (first run = cold cost),
//      then twice more (warm);
//   2. the largest size 40 times in a row (steady);
//   3. SIZES in turn, 40 rounds (each run follows a run of another size);
//   4. 200 runs of sizes drawn at random from SIZES;
// and prints the median of each size in each phase. If phase 3 or 4 is much
// slower than phase 2 for the same size, a shape change itself costs, even
// after every size has been seen.
//
//   ortgpu_shape_switch MODEL cpu|cuda SIZES [CUDA_OPTION=VALUE ...]
//   e.g. ortgpu_shape_switch resnet50.onnx cuda 1,16,32 prefer_nhwc=1 cudnn_conv_algo_search=HEURISTIC
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ort/random_inputs.h"
#include "ort/session.h"

using namespace ortgpu;

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL cpu|cuda SIZES [CUDA_OPTION=VALUE ...]\n", argv[0]);
    return 2;
  }
  SessionOptions so;
  so.provider = std::string(argv[2]) == "cuda" ? Provider::kCuda : Provider::kCpu;
  for (int i = 4; i < argc; ++i) {
    if (Status st = ParseKeyValue(argv[i], so.cuda_options); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 2;
    }
  }
  std::vector<int64_t> sizes;
  for (const std::string& part : [&] {
         std::vector<std::string> parts;
         std::string s = argv[3], cur;
         for (char c : s + ",") {
           if (c == ',') { if (!cur.empty()) parts.push_back(cur); cur.clear(); } else cur += c;
         }
         return parts;
       }()) {
    sizes.push_back(std::stoll(part));
  }
  auto session = Session::Load(argv[1], so);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  std::map<int64_t, std::vector<Tensor>> inputs;
  for (int64_t b : sizes) {
    for (const auto& in : (*session)->inputs()) {
      std::vector<int64_t> shape = in.shape;
      for (auto& d : shape) d = d < 0 ? b : d;
      Tensor t = Tensor::Zeros(in.name, in.dtype, shape);
      FillRandom(t, 7, DefaultIntRange(in.name, in.dtype));
      inputs[b].push_back(std::move(t));
    }
  }
  auto run = [&](int64_t b) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = (*session)->Run(inputs[b]);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!out.ok()) {
      std::fprintf(stderr, "batch %lld: %s\n", static_cast<long long>(b), out.status().ToString().c_str());
      std::exit(1);
    }
    return ms;
  };
  std::map<int64_t, double> cold;
  for (int64_t b : sizes) cold[b] = run(b);
  for (int k = 0; k < 2; ++k) {
    for (int64_t b : sizes) run(b);
  }
  const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<double> steady;
  for (int i = 0; i < 40; ++i) steady.push_back(run(largest));
  std::map<int64_t, std::vector<double>> cycled, random;
  for (int r = 0; r < 40; ++r) {
    for (int64_t b : sizes) cycled[b].push_back(run(b));
  }
  std::mt19937 rng(1);
  std::uniform_int_distribution<size_t> pick(0, sizes.size() - 1);
  for (int i = 0; i < 200; ++i) {
    const int64_t b = sizes[pick(rng)];
    random[b].push_back(run(b));
  }
  std::string opts;
  for (const auto& [k, v] : so.cuda_options) opts += " " + k + "=" + v;
  std::printf("shape_switch %s %s sizes %s%s\n", argv[1], argv[2], argv[3], opts.c_str());
  std::printf("%6s %10s %12s %12s %12s\n", "batch", "cold ms", "steady p50", "cycled p50", "random p50");
  for (int64_t b : sizes) {
    char steady_text[32] = "-";
    if (b == largest) std::snprintf(steady_text, sizeof steady_text, "%.3f", Median(steady));
    std::printf("%6lld %10.2f %12s %12.3f %12.3f\n", static_cast<long long>(b), cold[b], steady_text, Median(cycled[b]),
                Median(random[b]));
  }
  return 0;
}
