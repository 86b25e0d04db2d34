// BoundRunner: runs one Session repeatedly on fixed inputs in one of the I/O
// modes bench compares, from plain host tensors to CUDA graph replay:
//
//   kHost      Session::Run on host tensors each run (what `serve` does):
//              inputs copied in and outputs copied out on every run.
//   kBound     I/O binding; inputs bound once from host memory (copied in by
//              ORT each run), outputs left on the device (ORT allocates them).
//   kResident  inputs copied to device memory once and bound; outputs on the
//              device: no host<->device copies are timed (trtexec's
//              --noDataTransfers).
//   kCudaGraph as kResident with outputs preallocated at fixed addresses, the
//              session built with enable_cuda_graph=1: ORT captures the graph
//              on an early run and replays it afterwards.
//
// With the CPU provider, kBound and kResident bind CPU memory (memory() says
// "cpu"), and kCudaGraph is refused. A runner is used by one thread at a time
// (its IoBinding is not thread-safe); several runners may share one Session.
// REQUIRES: the Session outlives its runners.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ort/session.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu {

enum class IoMode { kHost, kBound, kResident, kCudaGraph };
// "host", "bound", "resident", "cuda-graph".
std::string_view IoModeName(IoMode mode);
Expected<IoMode> ParseIoMode(std::string_view name);
// Whether `mode` needs the session option enable_cuda_graph=1 (kCudaGraph).
inline bool NeedsCudaGraphOption(IoMode mode) { return mode == IoMode::kCudaGraph; }

struct BoundRunnerOptions {
  IoMode mode = IoMode::kHost;
  // The CUDA graph annotation ("gpu_graph_id" run option): one graph per
  // distinct input shape on a session. Used by kCudaGraph only.
  int graph_id = 0;
  // kCudaGraph: the output shapes, in model order, when the caller knows
  // them (serve learns them from another session of the model). Then no
  // run with host inputs precedes the capture: after one, ORT keeps copying
  // the feeds into buffers of its own, the captured graph reads those, and
  // inputs written later through SetInput would never reach it.
  std::vector<std::vector<int64_t>> output_shapes;
};

class BoundRunner {
 public:
  ~BoundRunner();
  BoundRunner(const BoundRunner&) = delete;
  BoundRunner& operator=(const BoundRunner&) = delete;

  // Binds `inputs` (host tensors of concrete shape, validated against the
  // model) as the mode requires. Runs the model once in kCudaGraph mode to
  // learn the output shapes. Errors: kCudaGraph without CUDA or without
  // enable_cuda_graph=1, device inputs of type string, allocation failures.
  static Expected<std::unique_ptr<BoundRunner>> Create(const Session& session, std::vector<Tensor> inputs,
                                                       const BoundRunnerOptions& options);

  // One run, returning when its outputs are complete (ORT synchronises the
  // device at the end of Run).
  Status Run();

  // Replaces the bytes of bound input i (same shape and type) with `bytes`
  // bytes from host memory: copied into its device buffer in kResident and
  // kCudaGraph (the address a captured graph reads stays the same), into
  // the bound host tensor otherwise. How `serve` feeds each batch to a
  // CUDA-graph session. InvalidArgument when the size differs.
  Status SetInput(size_t i, const uint8_t* src, size_t bytes);
  // The device address of bound input i's fixed buffer (kResident and
  // kCudaGraph on CUDA), where `serve` copies rows that are already in
  // device memory, device to device. Unimplemented when input i is bound in
  // host memory.
  Expected<uint64_t> InputDeviceAddress(size_t i) const;
  // Output `name` of the last Run where it is (kCudaGraph on CUDA: the
  // fixed device buffer), as a Tensor with a DeviceView and no bytes; valid
  // until the next Run. Unimplemented when the outputs are not preallocated
  // on the device.
  Expected<Tensor> DeviceOutput(const std::string& name) const;

  // The outputs of the last Run, copied to host memory: those named in
  // `names` (every output when empty), in model order.
  // REQUIRES: Run() succeeded at least once.
  Expected<std::vector<Tensor>> FetchOutputs(const std::vector<std::string>& names = {});

  IoMode mode() const { return options_.mode; }
  // Where bound tensors live: "host" (kHost), "cpu" or "cuda:N".
  const std::string& memory() const { return memory_; }

 private:
  struct Impl;
  BoundRunner() = default;
  const Session* session_ = nullptr;
  BoundRunnerOptions options_;
  std::vector<Tensor> host_inputs_;
  std::vector<Tensor> last_host_outputs_;  // kHost only
  std::string memory_;
  std::unique_ptr<Impl> impl_;  // ORT objects, absent in kHost mode
  // kCudaGraph: runs so far, up to kCaptureRuns (ORT's regular runs before
  // the capture, and the capture itself, hold the capture lock).
  static constexpr int kCaptureRuns = 3;
  int graph_runs_ = 0;
};

}  // namespace ortgpu
