#include "ort/batch_runner.h"

#include <algorithm>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "ort/batching.h"
#include "sys/switch_word.h"

namespace ortgpu {
namespace {

// The shape `dims` asks for a tensor of `count` elements and `batch` rows
// (batch < 0: unbatched); a single -1 takes whatever is left, as numpy's
// reshape does. nullopt when the counts cannot agree.
std::optional<std::vector<int64_t>> Reshaped(const std::vector<int64_t>& dims, int64_t batch, int64_t count) {
  std::vector<int64_t> shape;
  if (batch >= 0) shape.push_back(batch);
  shape.insert(shape.end(), dims.begin(), dims.end());
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) unknown = static_cast<int64_t>(i);
    else known *= shape[i];
  }
  if (unknown >= 0 && known > 0) shape[unknown] = count / known;
  if (ElementCount(shape).value_or(-1) != count) return std::nullopt;
  return shape;
}

}  // namespace

void GatherRows(const std::vector<RowCopy>& copies, size_t max_threads) {
  size_t total = 0;
  for (const RowCopy& c : copies) total += c.bytes;
  auto run = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      const RowCopy& c = copies[k];
      if (c.src == nullptr) {
        std::memset(c.dst, 0, c.bytes);
      } else if (c.bytes > 0) {
        std::memcpy(c.dst, c.src, c.bytes);
      }
    }
  };
  // The core count once: hardware_concurrency() reads /sys on every call (an
  // open, read and close on the worker's path of every batch).
  static const size_t kCores = std::thread::hardware_concurrency();
  if (max_threads == 0) max_threads = std::min<size_t>(kCores / 4, kMaxGatherThreads);
  const size_t threads = std::min({copies.size(), total / kParallelGatherBytes + 1, std::max<size_t>(1, max_threads)});
  if (threads <= 1) return run(0, copies.size());
  // Contiguous runs of copies of about equal bytes, one per thread; this
  // thread takes the first.
  std::vector<size_t> bounds{0};
  size_t acc = 0;
  for (size_t k = 0; k < copies.size() && bounds.size() < threads; ++k) {
    acc += copies[k].bytes;
    if (acc >= total * bounds.size() / threads) bounds.push_back(k + 1);
  }
  bounds.push_back(copies.size());
  std::vector<std::thread> helpers;
  for (size_t part = 1; part + 1 < bounds.size(); ++part) helpers.emplace_back(run, bounds[part], bounds[part + 1]);
  run(bounds[0], bounds[1]);
  for (auto& h : helpers) h.join();
}

Status RequestsOnHost(const std::vector<const std::vector<Tensor>*>& requests, const std::string& reader,
                      std::deque<std::vector<Tensor>>& copies, std::vector<const std::vector<Tensor>*>& out) {
  out.clear();
  for (const auto* req : requests) {
    if (std::none_of(req->begin(), req->end(), [](const Tensor& t) { return t.on_device(); })) {
      out.push_back(req);
      continue;
    }
    std::vector<Tensor>& copy = copies.emplace_back(*req);
    for (Tensor& t : copy) ORTGPU_RETURN_IF_ERROR(CopyToHost(t, reader));
    out.push_back(&copy);
  }
  return Status::Ok();
}


Expected<std::vector<Tensor>> RunJoinedOnHost(
    const std::vector<const std::vector<Tensor>*>& device_requests, int64_t padding_rows, const Clock& clock,
    int64_t& inputs_ready_ns, const std::function<Expected<std::vector<Tensor>>(const std::vector<Tensor>&)>& run) {
  std::deque<std::vector<Tensor>> copies;
  std::vector<const std::vector<Tensor>*> requests;
  ORTGPU_RETURN_IF_ERROR(RequestsOnHost(device_requests, "a run on host tensors", copies, requests));
  if (requests.size() == 1 && padding_rows == 0) {  // runs on the request's own tensors
    inputs_ready_ns = clock.NowNanos();
    return run(*requests.front());
  }
  ORTGPU_ASSIGN_OR_RETURN(auto joined, ConcatBatch(requests, padding_rows));
  inputs_ready_ns = clock.NowNanos();
  return run(joined);
}

Status ReshapeTensor(Tensor& t, const std::vector<int64_t>& dims, int64_t batch) {
  const int64_t count = t.element_count();
  auto shape = Reshaped(dims, batch, count);
  if (!shape) {
    std::vector<int64_t> asked;
    if (batch >= 0) asked.push_back(batch);
    asked.insert(asked.end(), dims.begin(), dims.end());
    return InvalidArgument("tensor '" + t.name + "' has " + std::to_string(count) +
                           " elements and cannot be reshaped to " + ShapeToString(asked) +
                           " as config.pbtxt's reshape asks; check dims and reshape");
  }
  t.shape = std::move(*shape);
  return Status::Ok();
}

namespace {
std::shared_ptr<const InstanceSessions> OnlyMain(std::unique_ptr<Session> session) {
  auto s = std::make_shared<InstanceSessions>();
  s->main = std::move(session);
  return s;
}

// The GPU of a CUDA session (its device_id option, 0 by default); -1 for
// any other provider.
int CudaDevice(const Session& session) {
  if (session.options().provider != Provider::kCuda) return -1;
  auto it = session.options().cuda_options.find("device_id");
  return it == session.options().cuda_options.end() ? 0 : std::atoi(it->second.c_str());
}
}  // namespace

BatchRunner::BatchRunner(std::unique_ptr<Session> session, ReshapeRules rules)
    : BatchRunner(OnlyMain(std::move(session)), std::move(rules)) {}

BatchRunner::BatchRunner(InstanceSessions sessions, ReshapeRules rules)
    : BatchRunner(std::make_shared<InstanceSessions>(std::move(sessions)), std::move(rules)) {}

BatchRunner::BatchRunner(std::shared_ptr<const InstanceSessions> sessions, ReshapeRules rules)
    : sessions_(std::move(sessions)), rules_(std::move(rules)) {
  if (sessions_->main != nullptr && (device_ = CudaDevice(*sessions_->main)) >= 0) {
    device_memory_ = CudaRuntimeDeviceMemory();
  }
}

BatchRunner::~BatchRunner() = default;

Status BatchRunner::BindDevice() {
  if (device_memory_ == nullptr || device_ < 0) return Status::Ok();
  return device_memory_->SetCurrentDevice(device_);
}

const Session& BatchRunner::SessionFor(int64_t rows) const {
  auto it = sessions_->by_batch_rows.find(rows);
  return it == sessions_->by_batch_rows.end() ? *sessions_->main : *it->second;
}

std::vector<int64_t> BatchRunner::pinned_batch_sizes() const {
  std::vector<int64_t> sizes;
  for (const auto& [rows, s] : sessions_->by_batch_rows) sizes.push_back(rows);
  return sizes;
}

Expected<std::vector<Tensor>> BatchRunner::ModelInputs(const std::vector<Tensor>& inputs) const {
  const int64_t batch = rules_.batched && !inputs.empty() && !inputs[0].shape.empty() ? inputs[0].shape[0] : -1;
  std::vector<Tensor> reshaped = inputs;
  for (auto& t : reshaped) {
    auto it = rules_.inputs.find(t.name);
    if (it != rules_.inputs.end()) ORTGPU_RETURN_IF_ERROR(ReshapeTensor(t, it->second, batch));
  }
  return reshaped;
}

Status BatchRunner::ReshapeOutputs(std::vector<Tensor>& outputs, int64_t batch) const {
  for (auto& t : outputs) {
    auto it = rules_.outputs.find(t.name);
    if (it != rules_.outputs.end()) ORTGPU_RETURN_IF_ERROR(ReshapeTensor(t, it->second, batch));
  }
  return Status::Ok();
}

Expected<ArenaShrinkage> ParseArenaShrinkage(std::string_view text) {
  if (auto s = ParseSwitch<ArenaShrinkage>(text)) return *s;
  return InvalidArgument("parameter arena_shrinkage is '" + std::string(text) +
                         "'; it must be auto (give back what a run larger than the warmed ones left), on (after every "
                         "run) or off (never)");
}

ArenaAfterRun BatchRunner::AfterRun(size_t input_bytes) {
  largest_input_bytes_ = std::max(largest_input_bytes_, input_bytes);
  bool shrink = shrinkage_ == ArenaShrinkage::kOn;
  if (shrinkage_ == ArenaShrinkage::kAuto && planned_input_bytes_ > 0) {
    // A burst of larger runs keeps its chunks while it lasts (no device
    // allocation per run); the first run within the plan after it gives
    // them back.
    if (input_bytes > planned_input_bytes_) {
      beyond_plan_ = true;
    } else if (beyond_plan_) {
      beyond_plan_ = false;
      shrink = true;
    }
  }
  if (!shrink) return ArenaAfterRun::kKeep;
  ++arena_shrinks_;
  return ArenaAfterRun::kShrink;
}

Expected<std::vector<Tensor>> BatchRunner::Run(const std::vector<Tensor>& inputs) {
  const int64_t batch = rules_.batched && !inputs.empty() && !inputs[0].shape.empty() ? inputs[0].shape[0] : -1;
  // Graph sessions replay one bound shape; everything else runs on main.
  const Session& session = sessions_->cuda_graphs ? *sessions_->main : SessionFor(batch);
  size_t bytes = 0;
  for (const Tensor& t : inputs) bytes += t.byte_size();
  const ArenaAfterRun after = AfterRun(bytes);
  if (rules_.inputs.empty() && rules_.outputs.empty()) return session.Run(inputs, {}, after);
  ORTGPU_ASSIGN_OR_RETURN(auto reshaped, ModelInputs(inputs));
  ORTGPU_ASSIGN_OR_RETURN(auto outputs, session.Run(reshaped, {}, after));
  ORTGPU_RETURN_IF_ERROR(ReshapeOutputs(outputs, batch));
  return outputs;
}

size_t BatchRunner::StagedBytes(int64_t rows) const {
  size_t bytes = 0;
  for (size_t i = 0; i < staging_->input_count(); ++i) bytes += staging_->row_bytes(i) * static_cast<size_t>(rows);
  return bytes;
}

Status BatchRunner::EnsureStaging(const std::vector<Tensor>& first, int64_t rows) {
  // The staged inputs follow the model's input order; a request names each.
  const auto& model_inputs = sessions_->main->inputs();
  bool fits = staging_ && staging_->max_rows() >= rows && staging_->input_count() == model_inputs.size();
  for (size_t i = 0; fits && i < model_inputs.size(); ++i) {
    const Tensor& t = first[staging_order_[i]];
    fits = t.name == staging_->spec(i).name && t.dtype == staging_->spec(i).dtype &&
           std::equal(t.shape.begin() + 1, t.shape.end(), staging_->spec(i).row_shape.begin(),
                      staging_->spec(i).row_shape.end());
  }
  if (fits) return Status::Ok();
  staging_.reset();
  std::vector<StagedInputSpec> specs;
  std::vector<int> order;
  for (const auto& in : model_inputs) {
    auto it = std::find_if(first.begin(), first.end(), [&](const Tensor& t) { return t.name == in.name; });
    if (it == first.end()) return InvalidArgument("input '" + in.name + "' is missing from the batch");
    order.push_back(static_cast<int>(it - first.begin()));
    specs.push_back({it->name, it->dtype, std::vector<int64_t>(it->shape.begin() + 1, it->shape.end())});
  }
  // Room for the largest batch this instance may run, so a later, larger
  // batch does not make the buffers again.
  int64_t max_rows = std::max(rows, rules_.max_batch_size);
  for (const auto& [r, s] : sessions_->by_batch_rows) max_rows = std::max(max_rows, r);
  ORTGPU_ASSIGN_OR_RETURN(staging_, InputStaging::Create(*sessions_->main, std::move(specs), max_rows));
  staging_order_ = std::move(order);
  return Status::Ok();
}

Expected<std::vector<Tensor>> BatchRunner::RunBatch(const std::vector<const std::vector<Tensor>*>& requests,
                                                      int64_t padding_rows, const Clock& clock,
                                                      int64_t& inputs_ready_ns,
                                                      const std::vector<std::string>& outputs,
                                                      const std::vector<const OutputDestinations*>& destinations) {
  const std::vector<Tensor>& first = *requests.front();
  const bool stageable =
      rules_.batched && !first.empty() && first.size() == sessions_->main->inputs().size() &&
      std::all_of(first.begin(), first.end(), [](const Tensor& t) { return t.dtype != DataType::kString && !t.shape.empty(); });
  if (!stageable) {
    return RunJoinedOnHost(requests, padding_rows, clock, inputs_ready_ns,
                           [this](const std::vector<Tensor>& joined) { return Run(joined); });
  }
  int64_t rows = padding_rows;
  for (const auto* req : requests) rows += req->front().shape[0];
  ORTGPU_RETURN_IF_ERROR(EnsureStaging(first, rows));
  // Rows already in device memory (CUDA shared memory) make the batch join
  // on the GPU; only a GPU instance can.
  const Tensor* on_device = nullptr;
  for (const auto* req : requests) {
    for (const Tensor& t : *req) {
      if (t.on_device() && on_device == nullptr) on_device = &t;
    }
  }
  if (on_device != nullptr && device_memory_ == nullptr) {
    // A CPU instance reads host memory: the rows in CUDA regions are copied
    // to the host once, and the batch joins as a host batch.
    std::deque<std::vector<Tensor>> copies;
    std::vector<const std::vector<Tensor>*> host;
    ORTGPU_RETURN_IF_ERROR(
        RequestsOnHost(requests, "model " + sessions_->main->label() + ", which runs on the CPU,", copies, host));
    return RunBatch(host, padding_rows, clock, inputs_ready_ns, outputs, destinations);
  }
  copies_.clear();
  pieces_.clear();
  // Outputs every request wants in its CUDA region stay on the device.
  device_outputs_.clear();
  if (device_memory_ != nullptr && destinations.size() == requests.size()) {
    for (const auto& o : sessions_->main->outputs()) {
      if (!outputs.empty() && std::find(outputs.begin(), outputs.end(), o.name) == outputs.end()) continue;
      if (o.dtype == DataType::kString) continue;  // ORT makes string tensors in host memory only
      if (std::all_of(destinations.begin(), destinations.end(),
                      [&](const OutputDestinations* d) { return d != nullptr && d->count(o.name) > 0; })) {
        device_outputs_.push_back(o.name);
      }
    }
  }
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < staging_->input_count(); ++i) {
    const StagedInputSpec& spec = staging_->spec(i);
    const size_t row_bytes = staging_->row_bytes(i);
    uint8_t* dst = staging_->data(i);
    for (const auto* req : requests) {
      // Same BatchKey: same names, types and row shapes; find by name, as
      // a client may list the inputs in any order.
      const Tensor* t = &(*req)[staging_order_[i]];
      if (t->name != spec.name) {
        auto it = std::find_if(req->begin(), req->end(), [&](const Tensor& x) { return x.name == spec.name; });
        if (it == req->end()) return InvalidArgument("input '" + spec.name + "' is missing from a request of the batch");
        t = &*it;
      }
      const size_t offset = static_cast<size_t>(dst - staging_->data(i));
      if (t->on_device()) {
        pieces_.push_back({i, offset, t->byte_size(), &*t->device});
      } else {
        copies_.push_back({dst, t->data.data(), t->data.size()});
        if (on_device != nullptr) pieces_.push_back({i, offset, t->data.size()});
      }
      dst += t->byte_size();
    }
    if (padding_rows > 0) {
      const size_t bytes = static_cast<size_t>(padding_rows) * row_bytes;
      if (on_device != nullptr) {
        pieces_.push_back({i, static_cast<size_t>(dst - staging_->data(i)), bytes, nullptr, /*padding=*/true});
      } else {
        copies_.push_back({dst, nullptr, bytes});
      }
    }
    std::vector<int64_t> shape{rows};
    shape.insert(shape.end(), spec.row_shape.begin(), spec.row_shape.end());
    if (auto it = rules_.inputs.find(spec.name); it != rules_.inputs.end()) {
      auto r = Reshaped(it->second, rows, ElementCount(shape).value_or(-1));
      if (!r) {
        return InvalidArgument("input '" + spec.name + "' of shape " + ShapeToString(shape) +
                               " cannot be reshaped as config.pbtxt's reshape asks; check dims and reshape");
      }
      shape = std::move(*r);
    }
    shapes.push_back(std::move(shape));
  }
  GatherRows(copies_);
  copies_.clear();
  Expected<std::vector<Tensor>> results = [&]() -> Expected<std::vector<Tensor>> {
    if (on_device != nullptr) {
      auto ran = RunOnDevice(rows, shapes, outputs, clock, inputs_ready_ns);
      pieces_.clear();
      return ran;
    }
    inputs_ready_ns = clock.NowNanos();
    if (sessions_->cuda_graphs && sessions_->by_batch_rows.count(rows) > 0) {
      return RunGraph(SessionFor(rows), rows, shapes, outputs);
    }
    std::optional<GpuTurn::Held> held;
    if (turn_ != nullptr && turn_whole_runs_) held.emplace(turn_->Take());
    return staging_->Run(SessionFor(rows), rows, shapes, outputs, device_outputs_, AfterRun(StagedBytes(rows)));
  }();
  if (!results.ok()) return results.status();
  if (!device_outputs_.empty()) {
    std::vector<int64_t> request_rows;
    for (const auto* req : requests) request_rows.push_back(req->front().shape[0]);
    ORTGPU_RETURN_IF_ERROR(WriteDeviceOutputs(*results, rows, request_rows, destinations));
  }
  ORTGPU_RETURN_IF_ERROR(ReshapeOutputs(*results, rows));
  return results;
}

Expected<std::vector<Tensor>> BatchRunner::RunOnDevice(int64_t rows, const std::vector<std::vector<int64_t>>& shapes,
                                                         const std::vector<std::string>& outputs, const Clock& clock,
                                                         int64_t& inputs_ready_ns) {
  DeviceMemory& memory = *device_memory_;
  const bool graph = sessions_->cuda_graphs && sessions_->by_batch_rows.count(rows) > 0;
  auto made = graphs_.find(rows);
  if (graph && (made == graphs_.end() || made->second == nullptr)) {
    // The first batch of a CUDA-graph size makes its StagedGraph from host
    // inputs: bring the device rows to the staging once (warm-up makes
    // every graph before READY, so traffic does not get here).
    for (const DevicePiece& p : pieces_) {
      if (p.from != nullptr) {
        ORTGPU_RETURN_IF_ERROR(
            memory.ToHost(staging_->data(p.input) + p.offset, p.from->address, p.bytes, p.from->device));
        ORTGPU_RETURN_IF_ERROR(memory.Wait(p.from->device));
      } else if (p.padding) {
        std::memset(staging_->data(p.input) + p.offset, 0, p.bytes);
      }
    }
    inputs_ready_ns = clock.NowNanos();
    return RunGraph(SessionFor(rows), rows, shapes, outputs);
  }
  // The buffers the run reads: the graph's fixed inputs, or the staging's
  // device buffers.
  std::vector<uint64_t> base(staging_->input_count());
  if (graph) {
    for (size_t i = 0; i < base.size(); ++i) {
      ORTGPU_ASSIGN_OR_RETURN(base[i], made->second->InputDeviceAddress(i));
    }
  } else {
    ORTGPU_RETURN_IF_ERROR(staging_->EnsureDeviceBuffers(device_memory_, device_));
    for (size_t i = 0; i < base.size(); ++i) base[i] = staging_->device_data(i);
  }
  // Host rows next to each other in the batch go up in one copy.
  for (size_t k = 0; k < pieces_.size();) {
    const DevicePiece& p = pieces_[k];
    if (p.from != nullptr) {
      ORTGPU_RETURN_IF_ERROR(
          memory.DeviceToDevice(base[p.input] + p.offset, device_, p.from->address, p.from->device, p.bytes)
              .WithContext("reading input '" + staging_->spec(p.input).name + "' from " + p.from->where));
      ++k;
    } else if (p.padding) {
      ORTGPU_RETURN_IF_ERROR(memory.Zero(base[p.input] + p.offset, p.bytes, device_));
      ++k;
    } else {
      size_t bytes = p.bytes, next = k + 1;
      for (; next < pieces_.size() && pieces_[next].input == p.input && pieces_[next].from == nullptr &&
             !pieces_[next].padding && pieces_[next].offset == p.offset + bytes;
           ++next) {
        bytes += pieces_[next].bytes;
      }
      ORTGPU_RETURN_IF_ERROR(memory.ToDevice(base[p.input] + p.offset, staging_->data(p.input) + p.offset, bytes, device_));
      k = next;
    }
  }
  ORTGPU_RETURN_IF_ERROR(memory.Wait(device_));
  inputs_ready_ns = clock.NowNanos();
  if (graph) return RunGraph(SessionFor(rows), rows, shapes, outputs, /*inputs_in_place=*/true);
  std::optional<GpuTurn::Held> held;
  if (turn_ != nullptr && turn_whole_runs_) held.emplace(turn_->Take());
  return staging_->RunFromDevice(SessionFor(rows), rows, shapes, outputs, device_outputs_, AfterRun(StagedBytes(rows)));
}

Status BatchRunner::WriteDeviceOutputs(std::vector<Tensor>& results, int64_t rows,
                                         const std::vector<int64_t>& request_rows,
                                         const std::vector<const OutputDestinations*>& destinations) {
  DeviceMemory& memory = *device_memory_;
  for (Tensor& t : results) {
    if (!t.on_device()) continue;
    // The batch's rows, not the output's first dim (a reshape may differ);
    // an output that does not split into them goes through the host write.
    const size_t row_bytes = t.device->size / static_cast<size_t>(rows);
    bool fits = row_bytes > 0 && t.device->size % static_cast<size_t>(rows) == 0;
    for (size_t i = 0; i < request_rows.size(); ++i) {
      fits = fits && static_cast<size_t>(request_rows[i]) * row_bytes <= destinations[i]->at(t.name).size;
    }
    if (!fits) {
      // A region too small for its rows: the front end's host write says so.
      Tensor host;
      host.name = t.name;
      host.dtype = t.dtype;
      host.shape = t.shape;
      host.data.resize(t.device->size);
      ORTGPU_RETURN_IF_ERROR(memory.ToHost(host.data.data(), t.device->address, t.device->size, t.device->device));
      ORTGPU_RETURN_IF_ERROR(memory.Wait(t.device->device));
      t = std::move(host);
      continue;
    }
    size_t offset = 0;
    std::vector<int> waits;
    for (size_t i = 0; i < request_rows.size(); ++i) {
      const DeviceView& dst = destinations[i]->at(t.name);
      const size_t bytes = static_cast<size_t>(request_rows[i]) * row_bytes;
      ORTGPU_RETURN_IF_ERROR(
          memory.DeviceToDevice(dst.address, dst.device, t.device->address + offset, t.device->device, bytes)
              .WithContext("writing output '" + t.name + "' into " + dst.where));
      offset += bytes;
      if (std::find(waits.begin(), waits.end(), dst.device) == waits.end()) waits.push_back(dst.device);
    }
    for (int d : waits) ORTGPU_RETURN_IF_ERROR(memory.Wait(d));
    // The placeholder: the shape, no bytes, and the run's buffer released.
    DeviceView written;
    written.where = "the requests' CUDA shared memory regions";
    t.device = std::move(written);
  }
  return Status::Ok();
}

Expected<std::vector<Tensor>> BatchRunner::RunGraph(const Session& session, int64_t rows,
                                                      const std::vector<std::vector<int64_t>>& shapes,
                                                      const std::vector<std::string>& outputs, bool inputs_in_place) {
  std::unique_ptr<StagedGraph>& graph = graphs_[rows];
  if (graph == nullptr) {
    // The output shapes from the main session (never from a host-input run
    // of the graph session: see BoundRunnerOptions::output_shapes).
    BoundRunnerOptions options;
    ORTGPU_ASSIGN_OR_RETURN(auto probe, staging_->Run(*sessions_->main, rows, shapes));
    if (probe.size() != session.outputs().size()) return Internal("the main session returned another set of outputs");
    for (const auto& t : probe) options.output_shapes.push_back(t.shape);
    auto made = StagedGraph::Create(session, *staging_, rows, shapes, options);
    if (!made.ok()) {
      graphs_.erase(rows);
      return made.status().WithContext("setting up the CUDA graph of batch size " + std::to_string(rows) +
                                       " (remove enable_cuda_graph from config.pbtxt if the model cannot be captured)");
    }
    graph = std::move(made).value();
  } else if (!inputs_in_place) {
    ORTGPU_RETURN_IF_ERROR(graph->Feed(*staging_));
  }
  std::optional<GpuTurn::Held> held;
  if (turn_ != nullptr) held.emplace(turn_->Take());
  Status run = graph->Replay();
  held.reset();  // the outputs are fetched after the turn
  if (!run.ok()) {
    return run.WithContext("replaying the CUDA graph of batch size " + std::to_string(rows) +
                           " (remove enable_cuda_graph from config.pbtxt if the model cannot be captured)");
  }
  if (device_outputs_.empty()) return graph->Fetch(outputs);
  // Outputs left in the graph's fixed buffers (copied into the requests'
  // regions next, before this worker's next replay); the others fetched.
  auto on_device = [&](const std::string& n) {
    return std::find(device_outputs_.begin(), device_outputs_.end(), n) != device_outputs_.end();
  };
  std::vector<std::string> fetched;
  for (const auto& o : session.outputs()) {
    const bool asked = outputs.empty() || std::find(outputs.begin(), outputs.end(), o.name) != outputs.end();
    if (asked && !on_device(o.name)) fetched.push_back(o.name);
  }
  std::vector<Tensor> host;
  if (!fetched.empty()) {
    ORTGPU_ASSIGN_OR_RETURN(host, graph->Fetch(fetched));
  }
  std::vector<Tensor> out;
  for (const auto& o : session.outputs()) {
    if (on_device(o.name)) {
      ORTGPU_ASSIGN_OR_RETURN(Tensor t, graph->DeviceOutput(o.name));
      out.push_back(std::move(t));
    }
    for (Tensor& t : host) {
      if (t.name == o.name) out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace ortgpu
