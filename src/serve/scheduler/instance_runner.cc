#include "serve/scheduler/instance_runner.h"

namespace ortgpu::serve {

Status ReshapeTensor(Tensor& t, const std::vector<int64_t>& dims, int64_t batch) {
  std::vector<int64_t> shape;
  if (batch >= 0) shape.push_back(batch);
  shape.insert(shape.end(), dims.begin(), dims.end());
  // A single -1 takes whatever is left, as numpy's reshape does.
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) unknown = static_cast<int64_t>(i);
    else known *= shape[i];
  }
  const int64_t count = t.element_count();
  if (unknown >= 0 && known > 0) shape[unknown] = count / known;
  if (ElementCount(shape).value_or(-1) != count) {
    return InvalidArgument("tensor '" + t.name + "' has " + std::to_string(count) +
                           " elements and cannot be reshaped to " + ShapeToString(shape) +
                           " as config.pbtxt's reshape asks; check dims and reshape");
  }
  t.shape = std::move(shape);
  return Status::Ok();
}

Expected<std::vector<Tensor>> SessionRunner::ModelInputs(const std::vector<Tensor>& inputs) const {
  const int64_t batch = rules_.batched && !inputs.empty() && !inputs[0].shape.empty() ? inputs[0].shape[0] : -1;
  std::vector<Tensor> reshaped = inputs;
  for (auto& t : reshaped) {
    auto it = rules_.inputs.find(t.name);
    if (it != rules_.inputs.end()) ORTGPU_RETURN_IF_ERROR(ReshapeTensor(t, it->second, batch));
  }
  return reshaped;
}

Expected<std::vector<Tensor>> SessionRunner::Run(const std::vector<Tensor>& inputs) {
  const int64_t batch = rules_.batched && !inputs.empty() && !inputs[0].shape.empty() ? inputs[0].shape[0] : -1;
  if (rules_.inputs.empty() && rules_.outputs.empty()) return session_->Run(inputs);
  ORTGPU_ASSIGN_OR_RETURN(auto reshaped, ModelInputs(inputs));
  ORTGPU_ASSIGN_OR_RETURN(auto outputs, session_->Run(reshaped));
  for (auto& t : outputs) {
    auto it = rules_.outputs.find(t.name);
    if (it != rules_.outputs.end()) ORTGPU_RETURN_IF_ERROR(ReshapeTensor(t, it->second, batch));
  }
  return outputs;
}

}  // namespace ortgpu::serve
