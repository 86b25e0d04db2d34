// ModelPreparer: bench's model at each precision it measures, made once per
// precision (not per sweep point), in-process, and judged against true
// float32 (precision::Float32Reference: TF32 off on CUDA) on the inputs bench
// measures with. fp32 is the reference itself; tf32 runs the model as it is
// with the session's CUDA options; fp16 and mixed go through
// precision::ConvertPrecision (with the placement-aware pass on CUDA), as
// `ortgpu convert` does. True float32 runs once, however many precisions.
//
// Blocking (it creates ORT sessions); one thread at a time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/precisions.h"
#include "onnx.pb.h"
#include "ort/session_options.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu::bench {

struct PrepareOptions {
  // The session bench measures with (provider, CUDA options, threads);
  // the reference is this with TF32 off.
  SessionOptions session;
  PrecisionBudget budget;
  // false: no accuracy judged (mixed, which searches by it, is refused).
  bool check_accuracy = true;
  int max_evaluations = 80;  // of the mixed search
};

struct PreparedModel {
  Precision precision = Precision::kTf32;
  // fp16 and mixed: the converted model; empty: the original one.
  std::string model_bytes;
  PrecisionAccuracy accuracy;
  // fp16 and mixed: "fp16: 54 of 56 nodes float16, 2 kept float32; ..."
  // for the report's notes; empty otherwise.
  std::string summary;
};

class ModelPreparer {
 public:
  // `fp32`: the model with its external data read in; `inputs`: those the
  // accuracy is judged on.
  ModelPreparer(::onnx::ModelProto fp32, std::vector<Tensor> inputs, PrepareOptions options);

  // REQUIRES: `p` is EffectivePrecision(options.session.provider, p).
  // Errors: a conversion that fails, a model that does not run (ORT's
  // message), a converted model over protobuf's 2 GB (bench loads it from
  // memory: convert it with `ortgpu convert` and bench the file).
  Expected<PreparedModel> Prepare(Precision p);

 private:
  // True float32 outputs on inputs_, computed on first use.
  Expected<std::vector<Tensor>> Reference();

  ::onnx::ModelProto fp32_;
  std::vector<Tensor> inputs_;
  PrepareOptions options_;
  std::optional<std::vector<Tensor>> reference_;
};

}  // namespace ortgpu::bench
