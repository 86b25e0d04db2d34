// The seams through which the precision code observes ONNX Runtime: running
// a model (for the accuracy check and the mixed search) and seeing where ORT
// placed each node (for the placement-aware pass). Tests fake both; the real
// ones create ORT sessions through ort/ (the only code that includes ORT).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ort/session_options.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace onnx {
class ModelProto;
}

namespace ortgpu::precision {

// Runs a model on inputs and returns every output. One thread at a time.
class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual Expected<std::vector<Tensor>> Run(const ::onnx::ModelProto& model, const std::vector<Tensor>& inputs) = 0;
};

// Where ORT runs a model's nodes: the names of the nodes it placed on a
// provider other than the one asked for (Memcpy nodes aside). One thread at
// a time.
class PlacementObserver {
 public:
  virtual ~PlacementObserver() = default;
  virtual Expected<std::set<std::string>> OffTargetNodes(const ::onnx::ModelProto& model,
                                                         const std::vector<Tensor>& inputs) = 0;
};

// A session per call with `options` (a model over 2 GB is written to a
// temporary folder with external data and loaded from there).
class OrtModelRunner : public ModelRunner {
 public:
  explicit OrtModelRunner(SessionOptions options) : options_(std::move(options)) {}
  Expected<std::vector<Tensor>> Run(const ::onnx::ModelProto& model, const std::vector<Tensor>& inputs) override;

 private:
  SessionOptions options_;
};

// One profiled run per call (ort/profile.h) on `options.provider`, with
// graph optimisations off so the profile names the model's own nodes.
class OrtPlacementObserver : public PlacementObserver {
 public:
  explicit OrtPlacementObserver(SessionOptions options) : options_(std::move(options)) {}
  Expected<std::set<std::string>> OffTargetNodes(const ::onnx::ModelProto& model,
                                                 const std::vector<Tensor>& inputs) override;

 private:
  SessionOptions options_;
};

// Runs a model through `inner` with its float interface matched: a float32
// input given to a model that declares it float16 (a model converted with
// keep_io_types off, served with float16 tensors) is cast to float16, a
// float16 one given to a float32 input to float32, and float16 outputs come
// back as float32, so such a model is compared with the float32 one on the
// same inputs. Other inputs pass as they are. `inner` must outlive it.
class InterfaceCastingRunner : public ModelRunner {
 public:
  explicit InterfaceCastingRunner(ModelRunner& inner) : inner_(inner) {}
  Expected<std::vector<Tensor>> Run(const ::onnx::ModelProto& model, const std::vector<Tensor>& inputs) override;

 private:
  ModelRunner& inner_;
};

// The options of true float32, the reference every lower precision is
// judged against: TF32 off on CUDA (use_tf32=0).
SessionOptions Float32Reference(SessionOptions options);

}  // namespace ortgpu::precision
