// TfSeeds: the (seed, seed2) pair a tf.data shuffle gets from Python's seed
// rules, and the op seeds TensorFlow draws when only a global seed is set.
//
// tensorflow/python/framework/random_seed.py get_seed(op_seed):
//   - global seed G and op seed S: (G mod (2^31-1), S mod (2^31-1));
//   - op seed only: (87654321 = DEFAULT_GRAPH_SEED, S mod (2^31-1));
//   - global only: the op seed is the next draw of the eager context's
//     counter, context.internal_operation_seed() =
//     random.Random(G).randint(0, 2^31-1), the Random object being created anew
//     by every tf.random.set_seed(G) (tensorflow/python/eager/context.py);
//   - neither: (None, None), which the kernels turn into a random seed
//     (tensorflow/core/kernels/data/random_seed_ops.cc): unpredictable.
//   - a result of (0, 0) becomes (0, 2^31-1).
// "mod" is Python's (never negative). tensorflow/python/data/util/random_seed.py
// adds nothing for seeds that went through get_seed.
//
// When the counter is consumed (eager mode): once by every get_seed(None)
// call after the last tf.random.set_seed - every Dataset.shuffle / list_files
// without seed=, every eager tf.random.* op without seed=, and anything else
// that calls get_seed(None) (some Keras layers and initializers do, depending
// on version). Which of those a script runs before its dataset is up to the
// script, so the draw index is an input (`op_seed_draw`, 0 = the first draw).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "base/status.hpp"

namespace clairfs::prefetch {

struct TfSeeds {
  int64_t seed = 0;
  int64_t seed2 = 0;
  auto operator<=>(const TfSeeds&) const = default;
};

struct TfSeedInput {
  std::optional<int64_t> global_seed;  // tf.random.set_seed(G) before the pipeline
  std::optional<int64_t> op_seed;      // seed= of shuffle / list_files
  uint64_t op_seed_draw = 0;           // global only: which counter draw (0 = first)
};

inline constexpr int64_t kTfMaxInt32 = 2147483647;  // _MAXINT32 = 2^31 - 1
inline constexpr int64_t kTfDefaultGraphSeed = 87654321;

// get_seed as above. InvalidArgument, naming the fix, when neither seed is
// given (TensorFlow would shuffle with a random seed).
Result<TfSeeds> TfGetSeed(const TfSeedInput& input);

// The k-th (0-based) value of random.Random(global_seed).randint(0, 2^31-1).
int64_t TfInternalOperationSeed(int64_t global_seed, uint64_t k);

}  // namespace clairfs::prefetch
