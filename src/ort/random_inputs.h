// Synthetic input values and shape checks shared by `doctor`, `bench` and
// `perf`: tensors filled from a seed with values a model accepts (integers
// in a range that keeps index inputs valid, masks set to 1), and the one
// grammar of --shape NAME:DIMS: NAME is an input (DIMS its full shape) or a
// symbolic dimension of one (DIMS one size, used wherever the dimension
// appears), checked against the model with the same error text in every
// command. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ort/session.h"
#include "ort/tensor.h"
#include "status/expected.h"
#include "status/status.h"

namespace ortgpu {

struct IntRange {
  int64_t lo = 0;  // inclusive
  int64_t hi = 0;  // exclusive
};

// The range integer values of input `name` get when nobody says otherwise:
// masks 1, token type / segment ids 0, int8/uint8 their full range, else
// [0, 100) (index inputs into tables of at least 100 rows stay valid).
IntRange DefaultIntRange(const std::string& name, DataType type);

// Fills `t` (its shape and dtype set, storage sized) with values drawn from
// `seed`: floats in [-1, 1), integers in `ints`, booleans 0/1, strings.
void FillRandom(Tensor& t, uint64_t seed, IntRange ints);

// OK when `shape` has the input's rank and matches its fixed dims; else
// InvalidArgument saying which dimension is fixed at what. `source` names
// where the shape came from ("--shape", "--input cat.npy").
Status CheckShapeFits(const TensorInfo& input, const std::vector<int64_t>& shape, const std::string& source);

// --shape values by NAME (ParseShapeFlag in ort/tensor.h).
using ShapeFlags = std::map<std::string, std::vector<int64_t>>;

// InvalidArgument, naming the flag, unless every NAME of `shapes` is an input
// of the model (and its DIMS fit it) or a symbolic dimension of one of its
// inputs (and its DIMS are one size of at least 1): "--shape nosuch:3: the
// model has no input or symbolic dimension 'nosuch'; its inputs: x
// (?x3x?: batch, width)".
// `flag` names the flag in messages (serve's warm-up: "--warmup-shape").
Status CheckShapeFlags(const std::vector<TensorInfo>& inputs, const ShapeFlags& shapes,
                       std::string_view flag = "--shape");

// How a symbolic dimension no --shape sizes is set: `leading` for dimension
// 0 (the batch), `others` for the rest; -1 makes it an error asking for
// --shape (bench), a size uses it (doctor: 1) and, when `defaulted` is not
// null, records "x[2]=width" there.
struct UnsizedDims {
  int64_t leading = 1;
  int64_t others = 1;
};

// The concrete shape of `input`: its --shape, else each symbolic dimension
// from the --shape of its name, else `unsized`.
Expected<std::vector<int64_t>> ResolveInputShape(const TensorInfo& input, const ShapeFlags& shapes,
                                                 UnsizedDims unsized, std::vector<std::string>* defaulted = nullptr,
                                                 std::string_view flag = "--shape");

// The flags of `shapes` that name an input of `inputs` or a symbolic
// dimension of one: what applies to this model when one command line serves
// several (doctor's --model, serve's repository).
ShapeFlags ShapeFlagsFor(const std::vector<TensorInfo>& inputs, const ShapeFlags& shapes);

// The most bytes one generated (or tiled) input may take: 4 GiB, as for
// serve's warm-up samples. Checked before anything is allocated, so a
// --shape of 2^40 elements is a clear error instead of std::bad_alloc.
inline constexpr uint64_t kMaxInputBytes = uint64_t{4} << 30;

// OK when a tensor of `dtype` and `shape` has every dimension >= 0 and takes
// at most `limit` bytes (a string element counts as sizeof(std::string));
// else InvalidArgument naming the input, its shape, the bytes it would take
// and `source` ("--shape", "--batch").
Status CheckInputSize(const std::string& name, DataType dtype, const std::vector<int64_t>& shape,
                      const std::string& source, uint64_t limit = kMaxInputBytes);

}  // namespace ortgpu
