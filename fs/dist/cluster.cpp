#include "fs/dist/cluster.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/log.hpp"
#include "fs/dist/manifest_envelope.hpp"
#include "fs/net/endpoint.hpp"
#include "fs/net/mpi_transport.hpp"
#include "partitioner/format/file_io.hpp"

namespace clairfs::fs {
namespace {

// MPICH's launcher tells the surviving ranks of a failure with SIGUSR1, whose
// default action would end them too: count it instead (async-signal-safe).
std::atomic<uint64_t> g_failure_notices{0};
extern "C" void OnPeerFailureNotice(int) { g_failure_notices.fetch_add(1); }

}  // namespace

Result<std::unique_ptr<Cluster>> Cluster::Join(int* argc, char*** argv,
                                               std::chrono::milliseconds start_limit) {
  std::unique_ptr<Cluster> c(new Cluster());
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  c->host_ = host;
  if (!LaunchedByMpi()) return c;
  struct sigaction sa = {};
  sa.sa_handler = OnPeerFailureNotice;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &sa, nullptr);
  auto mpi = MpiTransport::Init(argc, argv, start_limit);
  if (!mpi.ok()) return mpi.status();
  c->rank_ = (*mpi)->rank();
  c->size_ = (*mpi)->size();
  c->mpi_ = mpi->get();
  c->transport_ = std::move(mpi).value();
  return c;
}

Cluster::~Cluster() {
  if (!shut_down_) (void)Shutdown(std::chrono::milliseconds(0));
  Finalize(std::chrono::seconds(5), 1);
}

Status Cluster::Agree(const Status& local, std::chrono::milliseconds wait) {
  if (!transport_) return local;
  auto all = transport_->Gather(local.ok() ? 1 : 0, std::chrono::steady_clock::now() + wait);
  if (!all.ok()) {
    return Status::IOError("start-up: not every rank reached the same step within " +
                               std::to_string(wait.count()) + " ms (see the other ranks' logs)",
                           ETIMEDOUT);
  }
  std::string failed;
  for (size_t r = 0; r < all->size(); ++r) {
    if ((*all)[r] != 1) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
  }
  if (failed.empty()) return Status::Ok();
  if (!local.ok()) return local;
  return Status::IOError("start-up: rank(s) " + failed +
                         " could not start (their log says why); every rank stops");
}

void Cluster::Finalize(std::chrono::milliseconds limit, int exit_code) {
  if (mpi_ != nullptr) mpi_->Finalize(limit, exit_code);
}

Status Cluster::Start(const ClusterOptions& o) {
  // Metadata once: rank 0 reads, everyone receives.
  std::vector<char> envelope;
  Status read;  // rank 0's own outcome, reported as it is
  if (rank_ == 0) {
    std::vector<char> bytes;
    std::string file;
    read = format::Manifest::ReadFile(o.dataset, &bytes, &file);
    envelope = EncodeManifestEnvelope(read.ok() ? Result<std::vector<char>>(std::move(bytes))
                                                : Result<std::vector<char>>(read));
  }
  if (transport_) {
    CLAIRFS_RETURN_IF_ERROR(
        transport_->Broadcast(&envelope, 0, std::chrono::steady_clock::now() + o.start_timeout));
  }
  if (!read.ok()) return read;
  auto bytes = DecodeManifestEnvelope(std::move(envelope));
  if (!bytes.ok()) return bytes.status();
  auto m = format::Manifest::Parse(std::move(bytes).value(), o.dataset + "/manifest");
  if (!m.ok()) return m.status();
  manifest_ = *m;
  server_threads_ = static_cast<int>(std::max<uint32_t>(1, o.server_threads));

  CLAIRFS_RETURN_IF_ERROR(Place(o));
  own_ = std::make_unique<Ownership>(manifest_->partition_count(), manifest_->header().replicas,
                                     size_, placement_.homes);
  const Ownership& own = *own_;
  source_ = std::make_unique<SourceReads>(manifest_->partition_count() + 1);
  if (!o.local_dir.empty()) {
    stager_ = std::make_unique<Stager>(o.dataset, o.local_dir, manifest_, own.PartitionsOf(rank_),
                                       o.stage_threads);
    stager_->CountReads(source_.get());
    stager_->YieldToReads(o.stage_yield);
    if (o.first_use) stager_->FirstUse(FileSteps(o.first_use(*manifest_, size_)));
  }
  store_ = std::make_unique<DistributedPackStore>(
      o.dataset, manifest_, own, rank_, transport_.get(), stager_.get(), o.store, source_.get());
  Log(LogLevel::kInfo, "rank " + std::to_string(rank_) + "/" + std::to_string(size_) + " on " +
                           host_ + ": holds " + std::to_string(own.PartitionsOf(rank_).size()) +
                           " of " + std::to_string(manifest_->partition_count() + 1) +
                           " packs (replicas " + std::to_string(own.replicas()) + ")" +
                           (stager_ ? ", staging into " + o.local_dir : ", no staging"));
  return Status::Ok();
}

Status Cluster::Place(const ClusterOptions& o) {
  // Rank 0 decides and every rank takes its answer: the same homes everywhere
  // even if a rank could not compute them (an order file it cannot read).
  std::vector<uint64_t> words;  // moved, peer bytes, default peer bytes, then the homes
  if (rank_ == 0 && o.place) {
    placement_ = o.place(*manifest_, size_);
    if (placement_.homes.size() == manifest_->partition_count()) {
      words = {placement_.moved, placement_.peer_bytes, placement_.default_peer_bytes};
      for (int h : placement_.homes) words.push_back(static_cast<uint64_t>(h));
    }
  }
  if (transport_) {
    std::vector<char> bytes(words.size() * sizeof(uint64_t));
    if (!words.empty()) std::memcpy(bytes.data(), words.data(), bytes.size());
    CLAIRFS_RETURN_IF_ERROR(
        transport_->Broadcast(&bytes, 0, std::chrono::steady_clock::now() + o.start_timeout));
    words.resize(bytes.size() / sizeof(uint64_t));
    if (!words.empty()) std::memcpy(words.data(), bytes.data(), words.size() * sizeof(uint64_t));
  }
  placement_ = Placement{};
  if (words.size() != 3 + size_t{manifest_->partition_count()}) return Status::Ok();
  placement_.moved = static_cast<uint32_t>(words[0]);
  placement_.peer_bytes = words[1];
  placement_.default_peer_bytes = words[2];
  for (size_t i = 3; i < words.size(); ++i) {
    if (words[i] >= static_cast<uint64_t>(size_)) return Status::Ok();  // not for this job: p mod N
    placement_.homes.push_back(static_cast<int>(words[i]));
  }
  if (rank_ == 0 && placement_.moved > 0) {
    Log(LogLevel::kInfo,
        "placement: " + std::to_string(placement_.moved) + " of " +
            std::to_string(manifest_->partition_count()) +
            " partitions homed on the rank that reads them first; the first epoch reads " +
            std::to_string(placement_.peer_bytes >> 20) + " MiB of other ranks' packs instead of " +
            std::to_string(placement_.default_peer_bytes >> 20) + " MiB");
  }
  return Status::Ok();
}

void Cluster::ServeArea(AreaServeFn serve, Transport::NoticeFn on_notice) {
  if (!transport_) return;
  area_serve_ = std::move(serve);
  area_notice_ = std::move(on_notice);
}

void Cluster::ShareFirstUse(const std::vector<FileStep>& files) {
  if (stager_) stager_->FirstUseLater(files);
  if (!transport_ || !own_) return;
  // Per peer, the files of the packs it holds, as many to a notice as fit.
  std::vector<std::vector<char>> out(static_cast<size_t>(size_));
  const auto flush = [&](int peer) {
    if (out[peer].size() > 1) (void)transport_->Send(peer, out[peer]);  // lost with a dead peer
    out[peer].assign(1, static_cast<char>(kFirstUseNotice));
  };
  for (int r = 0; r < size_; ++r) out[r].assign(1, static_cast<char>(kFirstUseNotice));
  for (const FileStep& f : files) {
    if (f.node >= manifest_->node_count()) continue;
    const uint32_t entry[2] = {f.node, static_cast<uint32_t>(std::min<uint64_t>(
                                           f.step, std::numeric_limits<uint32_t>::max() - 1))};
    for (int r : own_->Owners(manifest_->node(f.node).partition)) {
      if (r == rank_) continue;
      if (out[r].size() + sizeof entry > kMaxNoticeBytes) flush(r);
      const char* bytes = reinterpret_cast<const char*>(entry);
      out[r].insert(out[r].end(), bytes, bytes + sizeof entry);
    }
  }
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) flush(r);
  }
}

void Cluster::TakeFirstUse(int peer, std::span<const char> notice) {
  constexpr size_t kEntry = 2 * sizeof(uint32_t);
  if ((notice.size() - 1) % kEntry != 0) {
    if (!bad_notice_logged_.exchange(true)) {
      Log(LogLevel::kWarn, "a first-use notice of " + std::to_string(notice.size()) +
                               " bytes from rank " + std::to_string(peer) +
                               " is malformed; ignored (said once)");
    }
    return;
  }
  std::vector<FileStep> files((notice.size() - 1) / kEntry);
  for (size_t i = 0; i < files.size(); ++i) {
    uint32_t entry[2];
    std::memcpy(entry, notice.data() + 1 + i * kEntry, kEntry);
    files[i] = {entry[0], entry[1]};
  }
  if (stager_) stager_->FirstUseLater(files);
}

Status Cluster::Serve() {
  if (transport_) {
    // The first byte says whose a notice is: a first-use notice, or the
    // writable area's (its operations are numbered 1-4).
    transport_->OnNotice([this](int peer, std::span<const char> notice) {
      if (!notice.empty() && static_cast<uint8_t>(notice[0]) == kFirstUseNotice) {
        TakeFirstUse(peer, notice);
      } else if (area_notice_) {
        area_notice_(peer, notice);
      }
    });
    DistributedPackStore* store = store_.get();
    const AreaServeFn* area = &area_serve_;
    CLAIRFS_RETURN_IF_ERROR(transport_->Start(
        [store, area](int peer, const PackRead& r) -> Result<std::vector<char>> {
          if (r.partition != kAreaPartition) return store->Serve(peer, r);
          if (!*area) return Status::IOError("no writable area on this rank", ESTALE);
          return (*area)(r);
        },
        server_threads_,
        [store](int peer, const PackRead& r) -> std::optional<Result<std::vector<char>>> {
          if (r.partition == kAreaPartition) return std::nullopt;  // a server thread's job
          return store->ServeIfCached(peer, r);
        }));
  }
  if (stager_) stager_->Start();
  return Status::Ok();
}

void Cluster::WriteStats(clairfs::JsonWriter& w) const {
  w.Integer("rank", rank_)
      .Integer("ranks", size_)
      .Integer("failure_notices", g_failure_notices.load())
      .Integer("pid", static_cast<uint64_t>(::getpid()))
      .String("host", host_);
  const EndpointCounters* n = transport_ ? transport_->counters() : nullptr;
  if (store_) {
    const DistCounters& c = store_->counters();
    w.BeginObject("peers")
        .Integer("reads", c.peer_reads)
        .Integer("bytes", c.peer_bytes)
        .Integer("failures", c.peer_failures);
    const PeerAheadCounters& a = store_->ahead_counters();
    w.Integer("ahead_reads", a.reads)
        .Integer("ahead_bytes", a.bytes)
        .Integer("ahead_taken", a.taken)
        .Integer("ahead_dropped", a.dropped)
        .Integer("ahead_failed", a.failed)
        .EndObject();
    // Counted where the replies are made; one rank has no peers to serve.
    w.BeginObject("served_to_peers")
        .Integer("reads", n ? n->reads_served.load() : 0)
        .Integer("bytes", n ? n->bytes_served.load() : 0)
        .EndObject();
    w.BeginObject("fallback")
        .Integer("reads", c.fallback_reads)
        .Integer("bytes", c.fallback_bytes)
        .EndObject();
    w.Integer("damaged_rereads", c.damaged_rereads);
  }
  if (n) {
    w.BeginObject("network")
        .Integer("reads_sent", n->reads_sent)
        .Integer("replies_received", n->replies_received)
        .Integer("timeouts", n->timeouts)
        .Integer("served_at_once", n->served_at_once)
        .Integer("rejected_messages", n->rejected_messages)
        .Integer("unknown_replies", n->unknown_replies)
        .Integer("notices_sent", n->notices_sent)
        .Integer("notices_received", n->notices_received)
        .Integer("notices_dropped", n->notices_dropped)
        .EndObject();
  }
  if (source_) {
    // What this rank read from the dataset directory, next to the dataset's
    // size and this rank's share of it (the packs it holds).
    const SourceTotals t = source_->totals();
    uint64_t dataset = 0, share = 0;
    for (uint32_t p = 0; p <= manifest_->partition_count(); ++p) {
      const uint64_t bytes = manifest_->partition(p).pack_bytes;
      dataset += bytes;
      if (store_ && store_->ownership().Holds(rank_, p)) share += bytes;
    }
    w.BeginObject("source")
        .Integer("dataset_bytes", dataset)
        .Integer("share_bytes", share)
        .Integer("staged_bytes", t.staged)
        .Integer("direct_bytes", t.direct)
        .Integer("distinct_bytes", t.distinct)
        .Integer("reread_bytes", t.reread)
        .EndObject();
  }
  w.BeginObject("placement")
      .Bool("by_reader", !placement_.homes.empty())
      .Integer("moved", placement_.moved)
      .Integer("first_epoch_peer_bytes", placement_.peer_bytes)
      .Integer("default_first_epoch_peer_bytes", placement_.default_peer_bytes)
      .EndObject();
  if (stager_) {
    const StagingProgress& p = stager_->progress();
    w.BeginObject("staging")
        .Integer("packs_total", p.packs_total)
        .Integer("packs_done", p.packs_done)
        .Integer("packs_reused", p.packs_reused)
        .Integer("packs_failed", p.packs_failed)
        .Integer("bytes_total", p.bytes_total)
        .Integer("bytes_copied", p.bytes_copied)
        .Integer("bytes_verified", p.bytes_verified)
        .Integer("bytes_kept", p.bytes_kept)
        .Integer("first_use_units", p.first_use_units)
        .Integer("bytes_first_use", p.bytes_first_use)
        .Integer("first_use_files", p.first_use_files)
        .Integer("threads", p.threads)
        .Integer("yield_ms", static_cast<uint64_t>(stager_->yield_quiet().count()))
        .Number("yield_seconds", static_cast<double>(p.yield_ns.load()) / 1e9)
        .Bool("finished", p.finished)
        .Number("seconds", p.seconds.load())
        .EndObject();
  }
}

Status Cluster::Shutdown(std::chrono::milliseconds wait) {
  if (shut_down_) return Status::Ok();
  shut_down_ = true;
  Status st;
  if (transport_) {
    st = transport_->Barrier(std::chrono::steady_clock::now() + wait);
    if (!st.ok()) {
      Log(LogLevel::kWarn, "not every rank reached shutdown within " +
                               std::to_string(wait.count()) + " ms: " + st.message());
    }
    transport_->Stop();
  }
  stager_.reset();  // cancels copies still running
  return st;
}

}  // namespace clairfs::fs
