// The simulated job's order (sampler.kind) from the project's own generators:
// torch's DistributedSampler over every rank, or one of the Keras generators
// a Horovod + Keras job runs on every rank (docs/simulation.md, "The order"):
//   keras       image_dataset_from_directory(batch_size=1, seed) sharded by
//               rank after loading (pattern B): every rank opens every file of
//               the generator's order, so a step of batch_size samples reads
//               batch_size x ranks files
//   keras-flow  ImageDataGenerator.flow_from_directory(seed) and model.fit
//               (pattern A): every rank reads the same batches of the same
//               index array
// The Keras generators are built as the daemon builds them from its
// prefetch_<name> settings (prefetch/options: BuildOrderSpec, then
// ReadOrder::Build) over a synthetic listing of the dataset's files.
// Immutable after MakeJobOrder; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.hpp"
#include "prefetch/options/read_order.hpp"
#include "prefetch/order/listing.hpp"
#include "prefetch/order/sampler.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/sim_config.hpp"

namespace clairfs::sim {

struct JobOrder {
  // World size nodes x ranks_per_node; indices are the dataset's files.
  std::unique_ptr<prefetch::Sampler> sampler;
  // The job as its loaders read: keras's batch_size is the files a step
  // reads (batch_size x ranks); otherwise config.job.
  JobSpec job;
  // The generator as the daemon builds it (Keras kinds; null for torch).
  std::shared_ptr<const prefetch::ReadOrder> generator;
};

// config.files files in config.classes class directories, file i the i-th in
// sorted order ("class_0/img_0.jpg", zero-padded): what the Keras listings
// walk. Class c holds files [c * files / classes, (c + 1) * files / classes).
prefetch::Listing SyntheticListing(const SimConfig& config);

// InvalidArgument when the generator refuses the settings or its order is
// not exact (a read window: the files of an epoch in an unknown order).
Result<JobOrder> MakeJobOrder(const SimConfig& config);

}  // namespace clairfs::sim
