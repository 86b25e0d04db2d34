#include "serve/scheduler/request_validation.h"

#include <set>

#include "serve/repository/model_config.h"

namespace ortgpu::serve {
namespace {

std::string Expected(const google::protobuf::RepeatedField<int64_t>& dims, int max_batch_size) {
  std::vector<int64_t> shape;
  if (max_batch_size > 0) shape.push_back(-1);
  shape.insert(shape.end(), dims.begin(), dims.end());
  return ShapeToString(shape);
}

}  // namespace

Status ValidateRequest(const inference::ModelConfig& config, const InferRequest& request) {
  const std::string model = "model '" + config.name() + "'";
  const int mbs = config.max_batch_size();
  std::set<std::string> seen;
  int64_t batch = -1;
  for (const Tensor& t : request.inputs) {
    if (!seen.insert(t.name).second) return InvalidArgument("input '" + t.name + "' is given twice; send it once");
    const inference::ModelInput* in = nullptr;
    for (const auto& c : config.input()) {
      if (c.name() == t.name) in = &c;
    }
    if (in == nullptr) {
      std::string names;
      for (const auto& c : config.input()) names += (names.empty() ? "" : ", ") + c.name();
      return InvalidArgument("unexpected input '" + t.name + "' for " + model + "; its inputs are: " + names);
    }
    const DataType want = FromConfigType(in->data_type());
    if (t.dtype != want) {
      return InvalidArgument("input '" + t.name + "' has datatype " + std::string(KServeName(t.dtype)) + " but " +
                             model + " expects " + std::string(KServeName(want)));
    }
    const size_t rank = static_cast<size_t>(in->dims_size()) + (mbs > 0 ? 1 : 0);
    const std::string expected = Expected(in->dims(), mbs);
    if (t.shape.size() != rank) {
      return InvalidArgument("input '" + t.name + "' has shape " + ShapeToString(t.shape) + " but " + model +
                             " expects " + expected + (mbs > 0 ? " (the first dimension is the batch)" : ""));
    }
    size_t offset = 0;
    if (mbs > 0) {
      offset = 1;
      if (t.shape[0] < 1 || t.shape[0] > mbs) {
        return InvalidArgument("input '" + t.name + "' has batch size " + std::to_string(t.shape[0]) + " but " +
                               model + " accepts 1 to " + std::to_string(mbs) + " (max_batch_size)");
      }
      if (batch >= 0 && t.shape[0] != batch) {
        return InvalidArgument("input '" + t.name + "' has batch size " + std::to_string(t.shape[0]) +
                               " but another input has " + std::to_string(batch) + "; every input needs the same");
      }
      batch = t.shape[0];
    }
    for (int d = 0; d < in->dims_size(); ++d) {
      const int64_t got = t.shape[d + offset];
      if (got < 0 || (in->dims(d) >= 0 && in->dims(d) != got)) {
        return InvalidArgument("input '" + t.name + "' has shape " + ShapeToString(t.shape) + " but " + model +
                               " expects " + expected + " (dimension " + std::to_string(d + offset) + " must be " +
                               (in->dims(d) >= 0 ? std::to_string(in->dims(d)) : std::string("non-negative")) + ")");
      }
    }
    ORTGPU_RETURN_IF_ERROR(ValidateTensorSize(t));
  }
  for (const auto& c : config.input()) {
    if (!c.optional() && seen.count(c.name()) == 0) {
      return InvalidArgument("missing input '" + c.name() + "' for " + model);
    }
  }
  for (const auto& o : request.outputs) {
    bool known = false;
    for (const auto& c : config.output()) known = known || c.name() == o.name;
    if (!known) {
      std::string names;
      for (const auto& c : config.output()) names += (names.empty() ? "" : ", ") + c.name();
      return InvalidArgument("unknown output '" + o.name + "' requested from " + model + "; its outputs are: " + names);
    }
  }
  return Status::Ok();
}

}  // namespace ortgpu::serve
