// InstanceRunner: one instance of a model, the thing a scheduler worker
// thread executes batches on. SessionRunner is the real one: its own ORT
// Session on its device, plus the config's reshapes; tests substitute fakes
// that block or fail on cue.
//
// A runner is owned by exactly one worker thread and is never called
// concurrently.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ort/session.h"
#include "status/expected.h"

namespace ortgpu::serve {

class InstanceRunner {
 public:
  virtual ~InstanceRunner() = default;
  // Runs one (possibly batched) request; returns every output, named.
  virtual Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) = 0;
};

struct ReshapeRules {
  // Batch dimension leads the request tensors (max_batch_size > 0).
  bool batched = false;
  // input name -> the shape the model expects (config input.reshape),
  // without the batch dimension.
  std::map<std::string, std::vector<int64_t>> inputs;
  // output name -> the shape the client sees (config output.dims) when the
  // output has a reshape, without the batch dimension.
  std::map<std::string, std::vector<int64_t>> outputs;
};

class SessionRunner : public InstanceRunner {
 public:
  SessionRunner(std::unique_ptr<Session> session, ReshapeRules rules)
      : session_(std::move(session)), rules_(std::move(rules)) {}
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override;
  // `inputs` as the model itself takes them (the config's reshape applied).
  Expected<std::vector<Tensor>> ModelInputs(const std::vector<Tensor>& inputs) const;
  const Session& session() const { return *session_; }

 private:
  std::unique_ptr<Session> session_;
  ReshapeRules rules_;
};

// Applies a reshape rule to a tensor of `batch` rows (batch < 0: unbatched).
// InvalidArgument when the element counts differ.
Status ReshapeTensor(Tensor& t, const std::vector<int64_t>& dims, int64_t batch);

}  // namespace ortgpu::serve
