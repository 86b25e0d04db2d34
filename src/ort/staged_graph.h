// StagedGraph: one CUDA-graph batch as `ortgpu serve` runs it, and as
// `ortgpu bench --io served-graph` measures it; both run this one code.
//
// The batch's rows wait in an InputStaging (pinned host memory on CUDA).
// Feed copies the first rows() rows of each staged input into the graph's
// fixed device inputs, Replay replays the graph (ORT captures it on its
// first runs: BoundRunner kCudaGraph), and Fetch copies the outputs asked
// for to the host; DeviceOutput leaves one in the graph's fixed buffer
// instead (serve's outputs into CUDA shared memory). What happens around
// these steps is the caller's: serve takes the GPU's turn around Replay
// only, and joins rows already in device memory straight into
// InputDeviceAddress; bench times Feed, Replay and Fetch together.
//
// Ownership: the Session outlives the graph. Thread-safety: none; one
// thread at a time (serve: the instance worker that owns it), and two
// graphs of one Session never replay at the same time (BoundRunner).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ort/input_staging.h"
#include "ort/io_binding.h"
#include "ort/session.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu {

class StagedGraph {
 public:
  ~StagedGraph();
  StagedGraph(const StagedGraph&) = delete;
  StagedGraph& operator=(const StagedGraph&) = delete;

  // The graph of a batch of `rows` rows, its inputs made from the first
  // `rows` rows of each of `staging`'s inputs, shaped `shapes` (one per
  // input; empty: [rows, row_shape...]); `options` gives the graph id and
  // the output shapes when known (its mode is kCudaGraph, whatever it
  // says). Errors: BoundRunner::Create's for kCudaGraph (no CUDA, a session
  // without enable_cuda_graph=1, string inputs, allocation), and
  // InvalidArgument for rows outside [1, staging.max_rows()] or a shape of
  // another element count.
  static Expected<std::unique_ptr<StagedGraph>> Create(const Session& session, const InputStaging& staging, int64_t rows,
                                                       const std::vector<std::vector<int64_t>>& shapes,
                                                       BoundRunnerOptions options);

  int64_t rows() const { return rows_; }
  // Copies the first rows() rows of every input of `staging` (the one
  // given to Create, or one with the same inputs) into the graph's inputs.
  Status Feed(const InputStaging& staging);
  // One replay; returns when its outputs are complete.
  Status Replay();
  // The outputs of the last replay named in `names` (every output when
  // empty), copied to the host, in model order.
  Expected<std::vector<Tensor>> Fetch(const std::vector<std::string>& names = {});
  // Output `name` of the last replay in the graph's fixed device buffer (a
  // Tensor with a DeviceView, valid until the next replay).
  Expected<Tensor> DeviceOutput(const std::string& name) const;
  // The device address of input i's fixed buffer, for rows copied in
  // device to device.
  Expected<uint64_t> InputDeviceAddress(size_t i) const;
  // Where the graph's buffers live ("cuda:N").
  const std::string& memory() const { return runner_->memory(); }
  // "batch 32, CUDA graph id 3".
  std::string Describe() const { return runner_->Describe(); }

 private:
  StagedGraph() = default;
  std::unique_ptr<BoundRunner> runner_;  // kCudaGraph
  std::vector<size_t> bytes_;            // per input: rows_ rows
  int64_t rows_ = 0;
};

}  // namespace ortgpu
