// clairfs-order: prints the files one training rank opens, in order, per epoch.
// Thin main: flags -> OrderSpec -> ReadOrder -> stdout. Exit 0 on success, 2 for
// bad usage, 1 when the dataset or order file cannot be used.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "base/cli.hpp"
#include "prefetch/options/order_flags.hpp"
#include "prefetch/options/read_order.hpp"
#include "prefetch/order/listing.hpp"
#include "tools/order/usage.hpp"

namespace {

using clairfs::Result;
using clairfs::Status;
namespace pf = clairfs::prefetch;

int Fail(const Status& st, int code) {
  std::cerr << "clairfs-order: " << st.message() << "\n";
  return code;
}

std::vector<uint64_t> EpochsToPrint(const clairfs::prefetch::OrderFlags& f,
                                    const pf::ReadOrder& order) {
  if (f.epoch) return {*f.epoch};
  if (f.spec.kind == pf::SamplerKind::kOrderFile && !f.epochs_given) {
    return order.order_file_epochs(f.rank);
  }
  std::vector<uint64_t> epochs;
  for (uint64_t e = 0; e < f.epochs; ++e) epochs.push_back(e);
  return epochs;
}

// --batches: per epoch one line "epoch E trains R read-ahead A positions k..."
// (KerasFlow::BatchReads, ReadAhead, EpochBatchPositions), then one line
// "permutation i..." per candidate index array (EpochPermutations).
int PrintBatches(const pf::KerasFlow& flow, const std::vector<uint64_t>& epochs) {
  std::string out;
  for (uint64_t e : epochs) {
    out += "epoch " + std::to_string(e) + " trains " + std::to_string(flow.BatchReads(e)) +
           " read-ahead " + std::to_string(flow.ReadAhead(e)) + " positions";
    for (uint64_t k : flow.EpochBatchPositions(e)) out += " " + std::to_string(k);
    out += '\n';
    Result<std::vector<std::vector<pf::Index>>> perms = flow.EpochPermutations(e);
    if (!perms.ok()) return Fail(perms.status(), 1);
    for (const std::vector<pf::Index>& p : perms.value()) {
      out += "permutation";
      for (pf::Index i : p) out += " " + std::to_string(i);
      out += '\n';
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    out.clear();
  }
  if (std::fflush(stdout) != 0) return Fail(Status::IOError("cannot write to stdout"), 1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Result<clairfs::prefetch::OrderFlags> parsed = clairfs::prefetch::ParseFlags(args);
  if (!parsed.ok()) return clairfs::cli::UsageError("clairfs-order", parsed.status().message());
  const clairfs::prefetch::OrderFlags& f = parsed.value();
  if (f.help) {
    std::cout << clairfs::tools::UsageText();
    return 0;
  }

  std::optional<pf::Listing> listing;
  if (!f.root.empty() || !f.listing.empty()) {
    Result<pf::Listing> l =
        f.root.empty() ? pf::ReadListingFile(f.listing) : pf::ScanDirectory(f.root);
    if (!l.ok()) return Fail(l.status(), 1);
    listing = std::move(l).value();
  }
  Result<pf::ReadOrder> order = pf::ReadOrder::Build(f.spec, listing ? &*listing : nullptr);
  if (!order.ok()) return Fail(order.status(), 1);
  const pf::ReadOrder& ro = order.value();
  if (f.rank >= ro.sampler().world_size()) {
    return Fail(Status::InvalidArgument("--rank " + std::to_string(f.rank) +
                                        " is not below the world size " +
                                        std::to_string(ro.sampler().world_size())),
                2);
  }
  if (!f.print_indices && !ro.has_paths()) {
    return Fail(Status::InvalidArgument("the order file holds indices: give --root or --listing "
                                        "to map them to paths, or --indices"),
                2);
  }
  if (ro.window() > 1) {
    std::cerr << "clairfs-order: note: Keras " << f.spec.keras.version.ToString()
              << " reshuffles every epoch; printed is the base order, and each open is among "
                 "the next "
              << ro.window() << " unread files of it\n";
  }

  if (f.print_batches) {
    return PrintBatches(static_cast<const pf::KerasFlow&>(ro.sampler()), EpochsToPrint(f, ro));
  }
  if (f.spec.kind == pf::SamplerKind::kKerasFlow &&
      !static_cast<const pf::KerasFlow&>(ro.sampler()).batch_order_exact()) {
    std::cerr << "clairfs-order: note: model.fit(shuffle=True) runs each epoch's batches of "
              << f.spec.keras_flow.batch_size
              << " in an order from Python's random; printed are the batches in batch-index "
                 "order (the files of each batch are exact)\n";
  }

  std::string out;
  for (uint64_t epoch : EpochsToPrint(f, ro)) {
    Result<std::vector<pf::Index>> indices = ro.sampler().Order(f.rank, epoch);
    if (!indices.ok()) return Fail(indices.status(), 1);
    for (pf::Index i : indices.value()) {
      if (f.print_indices) {
        out += std::to_string(i);
      } else {
        out += ro.dataset().paths[i];
      }
      out += '\n';
      if (out.size() > (1u << 20)) {
        std::fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (std::fflush(stdout) != 0) return Fail(Status::IOError("cannot write to stdout"), 1);
  return 0;
}
