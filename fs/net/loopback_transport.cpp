#include "fs/net/loopback_transport.hpp"

#include <algorithm>

namespace clairfs::fs {

LoopbackFabric::LoopbackFabric(int size)
    : size_(size), inbox_(size), dead_(size, false), damage_replies_(size, false) {}

void LoopbackFabric::SetDead(int rank, bool dead) {
  MutexLock lock(&mu_);
  dead_[rank] = dead;
  if (dead) inbox_[rank].clear();
}

void LoopbackFabric::SetDelay(std::chrono::microseconds delay) {
  MutexLock lock(&mu_);
  delay_ = delay;
}

void LoopbackFabric::SetReorder(bool reorder) {
  MutexLock lock(&mu_);
  reorder_ = reorder;
}

void LoopbackFabric::SetDamageReplies(int rank, bool damage) {
  MutexLock lock(&mu_);
  damage_replies_[rank] = damage;
}

void LoopbackFabric::Inject(int from, int to, MessageKind kind, std::vector<char> bytes) {
  Send(from, to, kind, std::move(bytes));
}

void LoopbackFabric::Send(int from, int to, MessageKind kind, std::vector<char> bytes) {
  MutexLock lock(&mu_);
  if (to < 0 || to >= size_ || dead_[to] || dead_[from]) return;
  if (kind == MessageKind::kReplies && damage_replies_[from] && !bytes.empty())
    bytes.back() ^= 0x40;
  auto& q = inbox_[to];
  Message m{std::chrono::steady_clock::now() + delay_, from, kind, std::move(bytes)};
  if (reorder_ && kind != MessageKind::kNotices && !q.empty()) {
    q.insert(q.begin() + static_cast<long>(rng_() % (q.size() + 1)), std::move(m));
  } else {
    q.push_back(std::move(m));
  }
}

std::vector<LoopbackFabric::Message> LoopbackFabric::Receive(int rank) {
  std::vector<Message> out;
  MutexLock lock(&mu_);
  const auto now = std::chrono::steady_clock::now();
  auto& q = inbox_[rank];
  // A notice that is not ready holds back its sender's later ones (sent
  // before the delay shrank), which must not overtake it.
  std::vector<bool> notices_held(size_, false);
  for (auto it = q.begin(); it != q.end();) {
    const bool notice = it->kind == MessageKind::kNotices;
    if (notice && notices_held[it->from]) {
      ++it;
    } else if (it->ready <= now) {
      out.push_back(std::move(*it));
      it = q.erase(it);
    } else {
      if (notice) notices_held[it->from] = true;
      ++it;
    }
  }
  return out;
}

Status LoopbackFabric::Broadcast(int rank, std::vector<char>* bytes, int root,
                                 std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(&mu_);
  const Status late = Status::IOError("broadcast: not every rank took part in time", ETIMEDOUT);
  if (rank == root) {
    bcast_[root] = *bytes;
    bcast_taken_ = 0;
    bcast_cv_.NotifyAll();
    // Wait until every other rank has its copy, as MPI_Bcast would.
    while (bcast_taken_ != size_ - 1 && bcast_cv_.WaitUntil(&lock, deadline)) {
    }
    const bool all = bcast_taken_ == size_ - 1;
    bcast_.erase(root);
    return all ? Status::Ok() : late;
  }
  while (bcast_.count(root) == 0 && bcast_cv_.WaitUntil(&lock, deadline)) {
  }
  if (bcast_.count(root) == 0) return late;
  *bytes = bcast_[root];
  ++bcast_taken_;
  bcast_cv_.NotifyAll();
  return Status::Ok();
}

Result<std::vector<int>> LoopbackFabric::Gather(int rank, int value,
                                                std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(&mu_);
  const uint64_t generation = gather_arrived_++ / size_;
  GatherRound& round = gathers_[generation];
  if (round.values.empty()) round.values.assign(size_, 0);
  round.values[rank] = value;
  ++round.arrived;
  bcast_cv_.NotifyAll();
  while (round.arrived != size_ && bcast_cv_.WaitUntil(&lock, deadline)) {
  }
  if (round.arrived != size_) {
    return Status::IOError("gather: not every rank took part in time", ETIMEDOUT);
  }
  std::vector<int> out = round.values;
  if (++round.left == size_) gathers_.erase(generation);
  return out;
}

Status LoopbackFabric::Barrier(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(&mu_);
  const uint64_t generation = barrier_arrived_ / size_;
  ++barrier_arrived_;
  bcast_cv_.NotifyAll();
  while (barrier_arrived_ / size_ <= generation && bcast_cv_.WaitUntil(&lock, deadline)) {
  }
  if (barrier_arrived_ / size_ <= generation) {
    return Status::IOError("barrier: not every rank arrived in time", ETIMEDOUT);
  }
  return Status::Ok();
}

LoopbackTransport::LoopbackTransport(std::shared_ptr<LoopbackFabric> fabric, int rank)
    : fabric_(std::move(fabric)), rank_(rank) {}

LoopbackTransport::~LoopbackTransport() { Stop(); }

Status LoopbackTransport::Broadcast(std::vector<char>* bytes, int root,
                                    std::chrono::steady_clock::time_point deadline) {
  return fabric_->Broadcast(rank_, bytes, root, deadline);
}

Result<std::vector<int>> LoopbackTransport::Gather(int value,
                                                   std::chrono::steady_clock::time_point deadline) {
  return fabric_->Gather(rank_, value, deadline);
}

Status LoopbackTransport::Start(ServeFn serve, int server_threads, ServeNowFn serve_now) {
  endpoint_ = std::make_unique<Endpoint>(rank_, fabric_->size(), std::move(serve), server_threads,
                                         std::move(serve_now), std::move(on_notice_));
  progress_ = std::thread([this] { Progress(); });
  return Status::Ok();
}

void LoopbackTransport::Read(int peer, const PackRead& read,
                             std::chrono::steady_clock::time_point deadline, ReplyFn done) {
  if (!endpoint_) {
    done(Status::IOError("transport not started", ESHUTDOWN));
    return;
  }
  endpoint_->Read(peer, read, deadline, std::move(done));
}

Status LoopbackTransport::Publish(std::span<const char> notice) {
  CLAIRFS_RETURN_IF_ERROR(CheckNoticeSize(notice));
  if (!endpoint_ || stop_) return Status::IOError("transport not running", ECANCELED);
  return NoticeDrops(endpoint_->Publish(notice));
}

Status LoopbackTransport::Send(int peer, std::span<const char> notice) {
  CLAIRFS_RETURN_IF_ERROR(CheckSend(rank_, fabric_->size(), peer, notice));
  if (!endpoint_ || stop_) return Status::IOError("transport not running", ECANCELED);
  return NoticeDrops(endpoint_->Send(peer, notice));
}

Status LoopbackTransport::Barrier(std::chrono::steady_clock::time_point deadline) {
  return fabric_->Barrier(deadline);
}

void LoopbackTransport::Progress() {
  while (!stop_) {
    for (auto& m : endpoint_->TakeOutgoing())
      fabric_->Send(rank_, m.peer, m.kind, std::move(m.bytes));
    for (auto& m : fabric_->Receive(rank_))
      endpoint_->Deliver(m.from, m.kind, m.bytes.data(), m.bytes.size());
    const auto now = std::chrono::steady_clock::now();
    const auto next = endpoint_->ExpireDeadlines(now);
    endpoint_->WaitForOutgoing(std::min(next, now + std::chrono::microseconds(200)));
  }
}

void LoopbackTransport::Stop() {
  if (!endpoint_) return;
  stop_ = true;
  if (progress_.joinable()) progress_.join();
  endpoint_->Stop();
}

}  // namespace clairfs::fs
