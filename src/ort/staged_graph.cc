#include "ort/staged_graph.h"

#include <string>

namespace ortgpu {

StagedGraph::~StagedGraph() = default;

Expected<std::unique_ptr<StagedGraph>> StagedGraph::Create(const Session& session, const InputStaging& staging, int64_t rows,
                                                           const std::vector<std::vector<int64_t>>& shapes,
                                                           BoundRunnerOptions options) {
  if (rows < 1 || rows > staging.max_rows()) {
    return InvalidArgument("a CUDA graph of " + std::to_string(rows) + " rows from staging buffers of " +
                           std::to_string(staging.max_rows()) + " rows");
  }
  if (!shapes.empty() && shapes.size() != staging.input_count()) {
    return InvalidArgument("a CUDA graph needs one shape per staged input");
  }
  std::unique_ptr<StagedGraph> g(new StagedGraph());
  g->rows_ = rows;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < staging.input_count(); ++i) {
    const StagedInputSpec& spec = staging.spec(i);
    Tensor t;
    t.name = spec.name;
    t.dtype = spec.dtype;
    if (shapes.empty()) {
      t.shape = {rows};
      t.shape.insert(t.shape.end(), spec.row_shape.begin(), spec.row_shape.end());
    } else {
      t.shape = shapes[i];
    }
    const size_t bytes = static_cast<size_t>(rows) * staging.row_bytes(i);
    const auto count = ElementCount(t.shape);
    if (!count || static_cast<size_t>(*count) * ElementSize(t.dtype) != bytes) {
      return InvalidArgument("input '" + spec.name + "' shaped " + ShapeToString(t.shape) + " does not hold " +
                             std::to_string(rows) + " staged rows");
    }
    const uint8_t* src = staging.data(i);
    t.data.assign(src, src + bytes);
    g->bytes_.push_back(bytes);
    inputs.push_back(std::move(t));
  }
  options.mode = IoMode::kCudaGraph;
  ORTGPU_ASSIGN_OR_RETURN(g->runner_, BoundRunner::Create(session, std::move(inputs), options));
  return g;
}

Status StagedGraph::Feed(const InputStaging& staging) {
  if (staging.input_count() != bytes_.size()) return InvalidArgument("the staging has another set of inputs than the graph");
  for (size_t i = 0; i < bytes_.size(); ++i) {
    ORTGPU_RETURN_IF_ERROR(runner_->SetInput(i, staging.data(i), bytes_[i]));
  }
  return Status::Ok();
}

Status StagedGraph::Replay() { return runner_->Run(); }

Expected<std::vector<Tensor>> StagedGraph::Fetch(const std::vector<std::string>& names) { return runner_->FetchOutputs(names); }

Expected<Tensor> StagedGraph::DeviceOutput(const std::string& name) const { return runner_->DeviceOutput(name); }

Expected<uint64_t> StagedGraph::InputDeviceAddress(size_t i) const { return runner_->InputDeviceAddress(i); }

}  // namespace ortgpu
