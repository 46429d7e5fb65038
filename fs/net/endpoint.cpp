#include "fs/net/endpoint.hpp"

#include <algorithm>
#include <cstring>

#include "base/thread_name.hpp"

namespace clairfs::fs {

Endpoint::Endpoint(int rank, int size, Transport::ServeFn serve, int server_threads,
                   Transport::ServeNowFn serve_now, Transport::NoticeFn on_notice,
                   size_t max_queued_requests)
    : rank_(rank),
      size_(size),
      serve_(std::move(serve)),
      serve_now_(std::move(serve_now)),
      on_notice_(std::move(on_notice)),
      max_queued_(max_queued_requests),
      out_requests_(size),
      out_replies_(size),
      out_notices_(size) {
  for (int i = 0; i < server_threads; ++i) {
    servers_.emplace_back([this] {
      NameThread("clairfs-serve");
      ServerLoop();
    });
  }
}

Endpoint::~Endpoint() { Stop(); }

void Endpoint::Read(int peer, const PackRead& read, std::chrono::steady_clock::time_point deadline,
                    Transport::ReplyFn done) {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    done(Status::InvalidArgument("no peer rank " + std::to_string(peer)));
    return;
  }
  {
    MutexLock lock(&mu_);
    if (!stopped_) {
      const uint64_t id = next_id_++;
      pending_.emplace(id, Pending{peer, deadline, std::move(done)});
      deadlines_.emplace(deadline, id);
      out_requests_[peer].push_back({id, read});
      has_outgoing_ = true;
      counters_.reads_sent++;
      out_cv_.NotifyOne();
      return;
    }
  }
  done(Status::IOError("transport stopped", ESHUTDOWN));
}

int Endpoint::Publish(std::span<const char> notice) { return Queue(notice, 0, size_); }

int Endpoint::Send(int peer, std::span<const char> notice) { return Queue(notice, peer, peer + 1); }

int Endpoint::Queue(std::span<const char> notice, int first, int end) {
  auto shared = std::make_shared<const std::vector<char>>(notice.begin(), notice.end());
  MutexLock lock(&mu_);
  if (stopped_ || size_ < 2) return 0;
  int dropped = 0;
  for (int p = std::max(first, 0); p < std::min(end, size_); ++p) {
    if (p == rank_) continue;
    if (out_notices_[p].size() >= kMaxQueuedNotices) {
      counters_.notices_dropped++;
      dropped++;
      continue;
    }
    out_notices_[p].push_back(shared);
    counters_.notices_sent++;
  }
  has_outgoing_ = true;
  out_cv_.NotifyOne();
  return dropped;
}

std::vector<OutMessage> Endpoint::TakeOutgoing() {
  std::vector<OutMessage> out;
  MutexLock lock(&mu_);
  if (!has_outgoing_) return out;
  bool notices_left = false;
  for (int p = 0; p < size_; ++p) notices_left |= TakeBatches(p, &out);
  has_outgoing_ = notices_left;
  return out;
}

bool Endpoint::TakeBatches(int peer, std::vector<OutMessage>* out) {
  auto& reqs = out_requests_[peer];
  while (!reqs.empty()) {  // batches of at most kMaxBatch
    const size_t n = std::min<size_t>(reqs.size(), wire::kMaxBatch);
    std::vector<wire::Request> batch(reqs.begin(), reqs.begin() + n);
    reqs.erase(reqs.begin(), reqs.begin() + n);
    out->push_back({peer, MessageKind::kRequests, wire::EncodeRequests(batch)});
  }
  auto& reps = out_replies_[peer];
  while (!reps.empty()) {
    const size_t n = std::min<size_t>(reps.size(), wire::kMaxBatch);
    std::vector<wire::Reply> batch(std::make_move_iterator(reps.begin()),
                                   std::make_move_iterator(reps.begin() + n));
    reps.erase(reps.begin(), reps.begin() + n);
    out->push_back({peer, MessageKind::kReplies, wire::EncodeReplies(batch)});
  }
  // At most one notice batch per peer and call: a burst of notices leaves over
  // several progress loops, and reads queued meanwhile go out between its
  // batches instead of behind all of it.
  auto& notices = out_notices_[peer];
  if (notices.empty()) return false;
  const size_t n = std::min<size_t>(notices.size(), wire::kMaxBatch);
  std::vector<std::span<const char>> batch;
  batch.reserve(n);
  for (size_t i = 0; i < n; ++i) batch.emplace_back(notices[i]->data(), notices[i]->size());
  out->push_back({peer, MessageKind::kNotices, wire::EncodeNotices(batch)});
  notices.erase(notices.begin(), notices.begin() + n);
  return !notices.empty();
}

void Endpoint::Deliver(int peer, MessageKind kind, const char* data, size_t size) {
  switch (kind) {
    case MessageKind::kRequests:
      return DeliverRequests(peer, data, size);
    case MessageKind::kReplies:
      return DeliverReplies(peer, data, size);
    case MessageKind::kNotices:
      return DeliverNotices(peer, data, size);
  }
  counters_.rejected_messages++;  // a kind no peer sends
}

void Endpoint::DeliverRequests(int peer, const char* data, size_t size) {
  auto reqs = wire::DecodeRequests(data, size);
  if (!reqs.ok()) {
    counters_.rejected_messages++;
    return;
  }
  // Small reads whose bytes are at hand are answered here, without the
  // two thread hand-offs a server thread costs; the rest wait for one.
  std::vector<wire::Reply> now;
  std::vector<wire::Request> later;
  for (auto& r : *reqs) {
    std::optional<Result<std::vector<char>>> data;
    if (serve_now_ && r.read.length <= kServeNowBytes) data = serve_now_(peer, r.read);
    if (data) {
      now.push_back(Answer(r, std::move(*data)));
      if (now.back().err == 0) counters_.served_at_once++;
    } else {
      later.push_back(r);
    }
  }
  MutexLock lock(&mu_);
  for (auto& reply : now) out_replies_[peer].push_back(std::move(reply));
  if (!now.empty()) has_outgoing_ = true;
  for (auto& r : later) {
    if (jobs_.size() >= max_queued_) {  // overloaded: answer at once, never grow without bound
      out_replies_[peer].push_back({r.id, EBUSY, {}});
      has_outgoing_ = true;
      continue;
    }
    jobs_.push_back({peer, r});
    job_cv_.NotifyOne();  // one server thread per request, not all of them
  }
  out_cv_.NotifyOne();
}

void Endpoint::DeliverReplies(int peer, const char* data, size_t size) {
  auto replies = wire::DecodeReplies(data, size);
  if (!replies.ok()) {
    counters_.rejected_messages++;
    return;
  }
  for (auto& r : *replies) {
    counters_.replies_received++;
    if (r.err) {
      Complete(r.id, Status::IOError("peer " + std::to_string(peer) + ": " + std::strerror(r.err),
                                     r.err));
    } else {
      Complete(r.id, r.data);
    }
  }
}

void Endpoint::DeliverNotices(int peer, const char* data, size_t size) {
  // Decoded whole first: a malformed batch hands the handler none of its notices.
  auto notices = wire::DecodeNotices(data, size);
  if (!notices.ok()) {
    counters_.rejected_messages++;
    return;
  }
  for (std::span<const char> notice : *notices) {
    counters_.notices_received++;
    if (on_notice_) on_notice_(peer, notice);
  }
}

void Endpoint::Complete(uint64_t id, Result<std::span<const char>> result) {
  Transport::ReplyFn done;
  {
    MutexLock lock(&mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) {
      counters_.unknown_replies++;
      return;
    }
    done = std::move(it->second.done);
    auto range = deadlines_.equal_range(it->second.deadline);
    for (auto d = range.first; d != range.second; ++d) {
      if (d->second == id) {
        deadlines_.erase(d);
        break;
      }
    }
    pending_.erase(it);
  }
  done(std::move(result));
}

std::chrono::steady_clock::time_point Endpoint::ExpireDeadlines(
    std::chrono::steady_clock::time_point now) {
  std::vector<std::pair<int, Transport::ReplyFn>> expired;
  std::chrono::steady_clock::time_point next = std::chrono::steady_clock::time_point::max();
  {
    MutexLock lock(&mu_);
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      const uint64_t id = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      expired.emplace_back(it->second.peer, std::move(it->second.done));
      pending_.erase(it);
    }
    if (!deadlines_.empty()) next = deadlines_.begin()->first;
  }
  for (auto& [peer, done] : expired) {
    counters_.timeouts++;
    done(Status::IOError("peer " + std::to_string(peer) + " did not answer in time", ETIMEDOUT));
  }
  return next;
}

void Endpoint::WaitForOutgoing(std::chrono::steady_clock::time_point until) {
  MutexLock lock(&mu_);
  while (!has_outgoing_ && !stopped_ && out_cv_.WaitUntil(&lock, until)) {
  }
}

void Endpoint::ServerLoop() {
  for (;;) {
    Job job;
    {
      MutexLock lock(&mu_);
      while (!stopped_ && jobs_.empty()) job_cv_.Wait(&lock);
      if (stopped_) return;
      job = jobs_.front();
      jobs_.pop_front();
    }
    const PackRead& r = job.request.read;
    wire::Reply reply = r.length > kMaxReadBytes ? wire::Reply{job.request.id, EINVAL, {}}
                                                 : Answer(job.request, serve_(job.peer, r));
    MutexLock lock(&mu_);
    out_replies_[job.peer].push_back(std::move(reply));
    has_outgoing_ = true;
    out_cv_.NotifyOne();
  }
}

wire::Reply Endpoint::Answer(const wire::Request& request, Result<std::vector<char>> data) {
  wire::Reply reply{request.id, 0, {}};
  if (data.ok()) {
    reply.data = std::move(data).value();
    counters_.reads_served++;
    counters_.bytes_served += reply.data.size();
  } else {
    reply.err = data.status().err() ? data.status().err() : EIO;
  }
  return reply;
}

void Endpoint::Stop() {
  std::unordered_map<uint64_t, Pending> pending;
  {
    MutexLock lock(&mu_);
    if (stopped_ && servers_.empty()) return;
    stopped_ = true;
    pending.swap(pending_);
    deadlines_.clear();
  }
  job_cv_.NotifyAll();
  out_cv_.NotifyAll();
  for (auto& t : servers_) t.join();
  servers_.clear();
  for (auto& [id, p] : pending) p.done(Status::IOError("transport stopped", ESHUTDOWN));
}

}  // namespace clairfs::fs
