// BatchRunner: ORT execution of one model instance's batches, the one code
// that serve's scheduler runs (serve::SessionRunner, a worker's
// InstanceRunner) and that bench measures (--io served --request-rows): the
// requests' rows joined into pinned staging buffers (or on the GPU, for rows
// already in device memory), padded, run on the session for that batch size
// (a CUDA graph's StagedGraph where the instance captures graphs, in the
// GPU's turn where it takes them), and the outputs fetched or left in the
// requests' CUDA regions.
//
// A BatchRunner is driven by one thread at a time (its worker); several
// BatchRunners may share one InstanceSessions and run concurrently.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ort/device_memory.h"
#include "ort/gpu_turn.h"
#include "ort/input_staging.h"
#include "ort/session.h"
#include "ort/staged_graph.h"
#include "status/expected.h"
#include "sys/clock.h"

namespace ortgpu {

// Where a request wants outputs written in device memory (its CUDA shared
// memory regions), by output name (serve's InferRequest::device_outputs).
using OutputDestinations = std::map<std::string, DeviceView>;

// The requests as a path that reads host memory needs them: a request with
// inputs in device memory (CUDA shared memory) is copied into `copies`
// with each such input brought to the host once (CopyToHost); the others
// are used as they are. `reader` says what needs the bytes, for errors.
Status RequestsOnHost(const std::vector<const std::vector<Tensor>*>& requests, const std::string& reader,
                      std::deque<std::vector<Tensor>>& copies, std::vector<const std::vector<Tensor>*>& out);

// Runs `requests` with `run` as a batch that cannot be staged (string
// inputs, an unbatched model) runs: inputs in CUDA regions brought to the
// host once, the requests joined in host memory (ConcatBatch) with
// `padding_rows` rows of zeros, or a single unpadded request on its own
// tensors. Sets `inputs_ready_ns` once the batch is joined.
Expected<std::vector<Tensor>> RunJoinedOnHost(
    const std::vector<const std::vector<Tensor>*>& requests, int64_t padding_rows, const Clock& clock,
    int64_t& inputs_ready_ns, const std::function<Expected<std::vector<Tensor>>(const std::vector<Tensor>&)>& run);

// One piece of a batch's joining: `bytes` from `src` to `dst`, or zeros
// (padding rows) when src is null.
struct RowCopy {
  uint8_t* dst = nullptr;
  const uint8_t* src = nullptr;
  size_t bytes = 0;
};
// Batches of at least this many bytes are joined by several threads: one
// thread copies ~5-6 GB/s into pinned memory, and 16 ResNet-50 rows
// (9.6 MB) took 1.5-1.8 ms of the served request on the H200.
inline constexpr size_t kParallelGatherBytes = 4u << 20;
inline constexpr size_t kMaxGatherThreads = 4;
// Performs `copies` (disjoint destinations): on the calling thread, or on
// up to kMaxGatherThreads (a quarter of the cores) for large batches, each
// taking a contiguous run of about equal bytes. Returns when all are done.
// `max_threads` 0: a quarter of the cores, at most kMaxGatherThreads.
void GatherRows(const std::vector<RowCopy>& copies, size_t max_threads = 0);

struct ReshapeRules {
  // Batch dimension leads the request tensors (max_batch_size > 0).
  bool batched = false;
  // The config's max_batch_size: the staging buffers hold that many rows
  // from the first batch on, so a larger batch never makes them again.
  int64_t max_batch_size = 0;
  // input name -> the shape the model expects (config input.reshape),
  // without the batch dimension.
  std::map<std::string, std::vector<int64_t>> inputs;
  // output name -> the shape the client sees (config output.dims) when the
  // output has a reshape, without the batch dimension.
  std::map<std::string, std::vector<int64_t>> outputs;
};

// The sessions of one instance: `main` runs any shape; each of
// `by_batch_rows` runs only batches of exactly that many rows. On CUDA a
// session whose input shape changes from one run to the next redoes its
// convolution set-up every time (about 100 ms a run for ResNet-50 on an
// H200, docs/BENCHMARKS.md), so an instance that runs a few padded batch
// sizes gives each its own session, and no session ever sees a second shape.
//
// With `cuda_graphs` the by_batch_rows sessions were built with the CUDA
// option enable_cuda_graph=1: each captures the graph of its one batch size
// on its first bound runs and replays it after (ORT's CUDA graphs need
// fixed device addresses, which the runner's StagedGraph per size keeps).
// Such sessions are not safe to run concurrently, so they are never shared
// between runners, and everything else (Run, unpadded sizes) goes to main.
struct InstanceSessions {
  std::shared_ptr<const Session> main;
  std::map<int64_t, std::shared_ptr<const Session>> by_batch_rows;
  bool cuda_graphs = false;
};

// What a runner's runs do with their session's arena afterwards (config
// parameter arena_shrinkage; docs/MEMORY.md, "Give-back"):
//   kAuto  after runs whose inputs were larger than any warm-up run's (a
//          longer sequence, a batch of a size the plan did not warm), the
//          first run within the plan gives back every chunk left free: a
//          burst keeps its chunks while it lasts, and the arena returns to
//          the plan after it, at the cost of one device allocation per burst;
//   kOn    after every run (the arena never keeps more than the run in
//          progress; each run allocates its activations again);
//   kOff   never (ORT's default: an arena keeps the most it ever held).
// CUDA-graph runs never shrink: a captured graph replays fixed addresses.
enum class ArenaShrinkage { kAuto, kOn, kOff };
// "auto" (or empty), "on"/"true"/"1", "off"/"false"/"0"; InvalidArgument
// naming the parameter and the values otherwise.
Expected<ArenaShrinkage> ParseArenaShrinkage(std::string_view text);

// Several BatchRunners may share one InstanceSessions (serve's
// workers_per_instance): each has its own staging buffers and thread, and
// ORT runs their batches on the shared sessions concurrently (Session::Run
// is thread-safe), so one joins the next batch while the other's runs on
// the GPU.
class BatchRunner {
 public:
  BatchRunner(std::unique_ptr<Session> session, ReshapeRules rules);
  BatchRunner(InstanceSessions sessions, ReshapeRules rules);
  BatchRunner(std::shared_ptr<const InstanceSessions> sessions, ReshapeRules rules);
  ~BatchRunner();
  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  // Makes the runner's GPU the calling thread's current device
  // (DeviceMemory::SetCurrentDevice); nothing for a runner without device
  // memory (a CPU instance). Called by every thread that drives the
  // instance: serve's worker and its loader before warm-up, bench's threads.
  Status BindDevice();
  // The GPU (CUDA ordinal) the batches run on; -1 on the CPU.
  int device() const { return device_; }
  // A CPU instance (no device memory, no GPU): ORT's CPU sessions run on
  // any thread. GPU instances run on the thread bound to them (the CUDA
  // EP's per-thread state).
  bool RunsOnAnyThread() const { return device_ < 0 && device_memory_ == nullptr && !sessions_->cuda_graphs; }
  // The turn this runner's batch runs take on the GPU (GpuTurn), shared
  // with the model's other runners on that GPU; none: batches run whenever
  // they are ready. With `whole_runs` every staged batch run takes it (ORT's
  // copies to and from the device inside the turn); otherwise only CUDA-graph
  // replays do, whose inputs are copied before and outputs after the turn.
  void SetGpuTurn(std::shared_ptr<GpuTurn> turn, bool whole_runs) {
    turn_ = std::move(turn);
    turn_whole_runs_ = whole_runs;
  }
  GpuTurn* gpu_turn() const { return turn_.get(); }
  // Where a batch with rows already in device memory (Tensor::device: CUDA
  // shared memory) is joined: `memory` on GPU `device`. A CUDA instance
  // has the CUDA runtime on its session's device_id by default; a CPU one
  // none, and such a batch's device rows are copied to the host once
  // (DeviceView::to_host) and joined as host rows; a row that cannot be
  // copied is refused (InvalidArgument naming the input, its region and
  // GPU). Tests give a FakeDeviceMemory to a CPU session.
  void SetDeviceMemory(std::shared_ptr<DeviceMemory> memory, int device) {
    device_memory_ = std::move(memory);
    device_ = device;
  }

  // Runs one (possibly batched) request on its own tensors (the config's
  // reshapes applied); returns every output, named.
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs);
  // Joins the requests' rows straight into the instance's staging buffers
  // (pinned host memory on CUDA, sized for the largest batch seen, reused)
  // and runs the session for that batch size on them: one host copy per
  // byte, no allocation proportional to the batch once the buffers exist.
  // Batches with string inputs, or unbatched models, are joined in host
  // memory (ConcatBatch) and run by Run.
  // Only `outputs` are fetched from the device (all when empty).
  //
  // A batch with rows in device memory is joined on the GPU instead, into
  // the buffer the run reads (RunOnDevice): device rows device to device,
  // host rows through the pinned staging with one host-to-device copy per
  // contiguous run, padding zeroed on the device.
  //
  // An output every request of a GPU batch placed in a CUDA region is
  // left on the device by the run (the graph's fixed output buffer, or
  // bound to device memory) and copied device to device into each
  // request's region at its rows; it comes back as a placeholder.
  Expected<std::vector<Tensor>> RunBatch(const std::vector<const std::vector<Tensor>*>& requests,
                                         int64_t padding_rows, const Clock& clock, int64_t& inputs_ready_ns,
                                         const std::vector<std::string>& outputs = {},
                                         const std::vector<const OutputDestinations*>& destinations = {});
  // `inputs` as the model itself takes them (the config's reshape applied).
  Expected<std::vector<Tensor>> ModelInputs(const std::vector<Tensor>& inputs) const;
  // The main session (placement checks profile it).
  const Session& session() const { return *sessions_->main; }
  // The sessions, for another runner of the same instance to share.
  const std::shared_ptr<const InstanceSessions>& sessions() const { return sessions_; }
  // The session that runs batches of `rows` rows.
  const Session& SessionFor(int64_t rows) const;
  // Batch sizes with a session of their own, ascending.
  std::vector<int64_t> pinned_batch_sizes() const;
  // Whether the last RunBatch ran from pinned staging buffers (for tests
  // and the start-up summary).
  bool staged_pinned() const { return staging_ && staging_->pinned(); }
  // How runs treat the arena from now on (ArenaShrinkage); `planned_bytes`:
  // the inputs of the largest run the plan measured (largest_input_bytes()
  // after the warm-up). Default kOff. REQUIRES: before the runner serves.
  void SetArenaShrinkage(ArenaShrinkage mode, size_t planned_bytes) {
    shrinkage_ = mode;
    planned_input_bytes_ = planned_bytes;
  }
  // The input bytes of the largest run so far.
  size_t largest_input_bytes() const { return largest_input_bytes_; }
  // Runs after which the arena was asked to give memory back.
  int64_t arena_shrinks() const { return arena_shrinks_; }

 private:
  // Output reshapes of the config applied to a batch of `batch` rows.
  Status ReshapeOutputs(std::vector<Tensor>& outputs, int64_t batch) const;
  // Staging buffers holding at least `rows` rows of inputs shaped like
  // `first`'s (re)made when too small or shaped otherwise.
  Status EnsureStaging(const std::vector<Tensor>& first, int64_t rows);

  // Runs the staged batch of `rows` rows on its CUDA-graph session, through
  // the StagedGraph bench measures (--io served-graph): the staged inputs
  // copied into fixed device buffers, the graph replayed (in the GPU's turn,
  // when there is one), the outputs asked for copied back. The first batch
  // of a size creates the graph.
  Expected<std::vector<Tensor>> RunGraph(const Session& session, int64_t rows,
                                         const std::vector<std::vector<int64_t>>& shapes,
                                         const std::vector<std::string>& outputs, bool inputs_in_place = false);
  // One piece of a batch joined on the device: `bytes` at `offset` of
  // input `input`'s buffer, from host staging (the same offset), from
  // device memory (`from`), or zeros (padding).
  struct DevicePiece {
    size_t input = 0;
    size_t offset = 0;
    size_t bytes = 0;
    const DeviceView* from = nullptr;  // null: host row (staged) or padding
    bool padding = false;
  };
  // Runs a batch whose pieces_ include device rows (see RunBatch): the
  // host rows are already in the pinned staging.
  Expected<std::vector<Tensor>> RunOnDevice(int64_t rows, const std::vector<std::vector<int64_t>>& shapes,
                                            const std::vector<std::string>& outputs, const Clock& clock,
                                            int64_t& inputs_ready_ns);
  // Whether a run of `input_bytes` gives its arena back what it left free.
  ArenaAfterRun AfterRun(size_t input_bytes);
  // The input bytes of a staged batch of `rows` rows.
  size_t StagedBytes(int64_t rows) const;
  // Copies every output left on the device (Tensor::device) into the
  // requests' destinations, device to device, at each request's rows, and
  // makes it a placeholder; an output a destination is too small for is
  // brought to the host instead (the front end then says which).
  Status WriteDeviceOutputs(std::vector<Tensor>& results, int64_t rows, const std::vector<int64_t>& request_rows,
                            const std::vector<const OutputDestinations*>& destinations);

  std::shared_ptr<const InstanceSessions> sessions_;
  ReshapeRules rules_;
  std::unique_ptr<InputStaging> staging_;
  std::vector<int> staging_order_;  // staging input i <- request input staging_order_[i] (by name)
  std::map<int64_t, std::unique_ptr<StagedGraph>> graphs_;  // by batch rows (cuda_graphs only)
  std::vector<RowCopy> copies_;  // the current batch's joining, reused
  std::vector<DevicePiece> pieces_;  // a device batch's joining, reused
  std::vector<std::string> device_outputs_;  // the current batch's outputs left on the device
  std::shared_ptr<DeviceMemory> device_memory_;  // null: a CPU instance
  int device_ = -1;
  std::shared_ptr<GpuTurn> turn_;
  bool turn_whole_runs_ = false;
  ArenaShrinkage shrinkage_ = ArenaShrinkage::kOff;
  size_t planned_input_bytes_ = 0;
  size_t largest_input_bytes_ = 0;
  bool beyond_plan_ = false;  // a run larger than the plan ran since the last shrink
  int64_t arena_shrinks_ = 0;
};

// Applies a reshape rule to a tensor of `batch` rows (batch < 0: unbatched).
// InvalidArgument when the element counts differ.
Status ReshapeTensor(Tensor& t, const std::vector<int64_t>& dims, int64_t batch);

}  // namespace ortgpu
