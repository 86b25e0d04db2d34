// BoundRunner: runs one Session repeatedly on fixed inputs in one of the I/O
// modes bench compares, from plain host tensors to CUDA graph replay:
//
//   kHost        Session::Run on host tensors each run: inputs copied in
//                (from pageable memory) and outputs copied out every run.
//   kBound       I/O binding; inputs bound once from host memory (copied in
//                by ORT each run), outputs left on the device (ORT allocates
//                them).
//   kResident    inputs copied to device memory once and bound; outputs on
//                the device: no host<->device copies are timed (trtexec's
//                --noDataTransfers).
//   kCudaGraph   as kResident with outputs preallocated at fixed addresses,
//                the session built with enable_cuda_graph=1: ORT captures the
//                graph on an early run and replays it afterwards.
//   kServed      what `ortgpu serve` runs for a batch without CUDA graphs: the
//                inputs in the instance's staging buffers (InputStaging: CUDA
//                pinned memory on CUDA), every output copied to the host each
//                run. With request_rows, a served-shaped run: each run joins
//                the batch from separate requests through serve's own
//                BatchRunner (ort/batch_runner.h).
//   kServedGraph what serve runs for a batch of a padded size with CUDA
//                graphs, through serve's own code (StagedGraph): the staged
//                inputs copied into the graph's fixed device buffers, the
//                graph replayed, every output copied to the host, each run.
//                Needs enable_cuda_graph=1.
//
// Only kServed and kServedGraph time what serve does; the others are
// references (ServedByServe). With the CPU provider, kBound and kResident
// bind CPU memory (memory() says "cpu"), kServed stages in CPU memory, and
// the graph modes are refused. A runner is used by one thread at a time (its
// IoBinding is not thread-safe); several runners may share one Session, but
// two graph runners on one Session need distinct graph ids and never run at
// the same time (ORT's CUDA graphs are not safe to replay concurrently on one
// session). REQUIRES: the Session outlives its runners.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ort/input_staging.h"
#include "ort/session.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu {

class BatchRunner;
class StagedGraph;

enum class IoMode { kHost, kBound, kResident, kCudaGraph, kServed, kServedGraph };
// "host", "bound", "resident", "cuda-graph", "served", "served-graph".
std::string_view IoModeName(IoMode mode);
Expected<IoMode> ParseIoMode(std::string_view name);
// Whether `mode` needs the session option enable_cuda_graph=1 (kCudaGraph,
// kServedGraph).
inline bool NeedsCudaGraphOption(IoMode mode) { return mode == IoMode::kCudaGraph || mode == IoMode::kServedGraph; }
// Whether `mode` times what `ortgpu serve` does for a batch (kServed,
// kServedGraph); the others leave out copies serve makes, or make ones
// it does not.
inline bool ServedByServe(IoMode mode) { return mode == IoMode::kServed || mode == IoMode::kServedGraph; }
// Why serve cannot reproduce a figure measured in `mode`: "" for the
// served modes, else one clause ("serve copies every output to the host,
// io=bound leaves them on the device").
std::string_view NotServedReason(IoMode mode);

struct BoundRunnerOptions {
  IoMode mode = IoMode::kHost;
  // The CUDA graph annotation ("gpu_graph_id" run option) of kCudaGraph and
  // kServedGraph: one graph per runner on a session (a second runner with
  // the same id would replay the first one's graph, on the first one's
  // buffers). ORT reserves 0 for its own default; serve's graph sessions
  // each hold one runner, so 0 is theirs.
  int graph_id = 0;
  // kCudaGraph, kServedGraph: the output shapes, in model order, when the caller knows
  // them (serve learns them from another session of the model). Then no
  // run with host inputs precedes the capture: after one, ORT keeps copying
  // the feeds into buffers of its own, the captured graph reads those, and
  // inputs written later through SetInput would never reach it.
  std::vector<std::vector<int64_t>> output_shapes;
  // kServed: 0 runs the batch as one request whose rows are staged once;
  // R > 0 makes each run a served-shaped one, as serve's worker runs a
  // batch of separate requests: the batch split into requests of R rows
  // (the last may have fewer), their rows gathered into the staging
  // (GatherRows), the run, and the outputs split back per request
  // (SplitBatch), all through serve's BatchRunner::RunBatch.
  int64_t request_rows = 0;
};

class BoundRunner {
 public:
  ~BoundRunner();
  BoundRunner(const BoundRunner&) = delete;
  BoundRunner& operator=(const BoundRunner&) = delete;

  // Binds `inputs` (host tensors of concrete shape, validated against the
  // model) as the mode requires. The graph modes run the model once on host
  // tensors, capturing no graph, to learn the output shapes unless given.
  // Errors: a graph mode without CUDA or without enable_cuda_graph=1, device
  // inputs of type string, kServed(Graph) inputs that do not stage (strings,
  // scalars), allocation failures; each names the batch and graph id.
  static Expected<std::unique_ptr<BoundRunner>> Create(const Session& session, std::vector<Tensor> inputs,
                                                       const BoundRunnerOptions& options);

  // One run, returning when its outputs are complete (ORT synchronises the
  // device at the end of Run).
  Status Run();

  // Replaces the bytes of bound input i (same shape and type) with `bytes`
  // bytes from host memory: copied into its device buffer in kResident and
  // kCudaGraph (the address a captured graph reads stays the same), into
  // the staging buffer in kServed and kServedGraph (each run takes it from
  // there), into the bound host tensor otherwise. How `serve` feeds each batch to a
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
  // "batch 32, CUDA graph id 3" (no graph id outside the graph modes): how
  // errors name this runner.
  std::string Describe() const;
  // Where bound tensors live: "host" (kHost), "cpu" or "cuda:N".
  const std::string& memory() const { return memory_; }

 private:
  struct Impl;
  BoundRunner() = default;
  const Session* session_ = nullptr;
  BoundRunnerOptions options_;
  std::vector<Tensor> host_inputs_;
  std::vector<Tensor> last_host_outputs_;  // kHost, kServed, kServedGraph
  std::unique_ptr<InputStaging> staging_;  // kServed, kServedGraph
  std::unique_ptr<StagedGraph> served_graph_;  // kServedGraph
  std::unique_ptr<BatchRunner> batch_;  // kServed with request_rows
  std::vector<std::vector<Tensor>> requests_;  // views of host_inputs_' rows, request_rows each
  std::vector<int64_t> request_row_counts_;
  // kServed with request_rows: batch_ over the session and requests_.
  Status MakeServedShapedRun();
  std::string memory_;
  std::unique_ptr<Impl> impl_;  // ORT objects, absent in kHost mode
  bool graph() const { return NeedsCudaGraphOption(options_.mode); }
  // The bound run of every mode but kHost and kServed.
  Status RunBound();
  // kServed, kServedGraph: the staging buffers, holding host_inputs_.
  Status Stage();
  // The outputs of the last bound run, copied to the host.
  Expected<std::vector<Tensor>> CopyOutputsToHost(const std::vector<std::string>& wanted) const;
  // kCudaGraph: runs so far, up to kCaptureRuns (ORT's regular runs before
  // the capture, and the capture itself, hold the capture lock).
  static constexpr int kCaptureRuns = 3;
  int graph_runs_ = 0;
};

}  // namespace ortgpu
