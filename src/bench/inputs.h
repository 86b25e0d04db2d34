// Bench inputs: the tensors a benchmark feeds the model, generated from the
// model's input metadata (every ONNX tensor type, sensible value ranges) or
// read from files, at a requested batch size. Pure given a seed: the same
// spec and batch give the same bytes, so every configuration of one run (and
// the CPU reference) sees identical inputs. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ort/random_inputs.h"
#include "ort/session.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu::bench {


struct InputSpec {
  // --shape NAME:DIMS. NAME is an input ("input_ids:1x128", the full shape)
  // or a symbolic dimension ("sequence:128", its value everywhere).
  std::map<std::string, std::vector<int64_t>> shapes;
  // --int-range NAME:LO:HI for integer inputs (values in [LO, HI)); without
  // it integer inputs get [0, 100), "*mask*" inputs 1 and "*type_ids*" 0.
  std::map<std::string, IntRange> int_ranges;
  // --input NAME=FILE (.npy or .pb); its shape wins, and its first dimension
  // is tiled or cut to the batch size when that dimension is symbolic.
  std::map<std::string, std::string> files;
  uint32_t seed = 1;
};

// Parsers for the flag spellings; errors name the flag text.
Status ParseShapeFlag(const std::string& text, InputSpec& spec);     // "name:1x128"
Status ParseIntRangeFlag(const std::string& text, InputSpec& spec);  // "name:0:30000"
Status ParseInputFlag(const std::string& text, InputSpec& spec);     // "name=file.npy"

// The concrete shape of `input` at `batch`: --shape first, then symbolic
// dimension values; a symbolic first dimension becomes `batch`. Any other
// unresolved dimension is an error that says which --shape to add.
// REQUIRES: batch >= 1.
Expected<std::vector<int64_t>> ResolveShape(const TensorInfo& input, const InputSpec& spec, int64_t batch);

// One tensor per model input. Errors: an unknown name in spec (listing the
// model's inputs), a shape or file that does not fit the model.
Expected<std::vector<Tensor>> MakeInputs(const std::vector<TensorInfo>& inputs, const InputSpec& spec, int64_t batch);

// True when the model has at least one input whose first dimension is
// symbolic, i.e. when a batch size other than its fixed one can be fed.
bool HasDynamicBatch(const std::vector<TensorInfo>& inputs);

}  // namespace ortgpu::bench
