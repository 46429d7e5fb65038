#include "prefetch/planner/future_stream.hpp"

#include <algorithm>
#include <cassert>

namespace clairfs::prefetch {

FutureStream::FutureStream(uint32_t ranks, uint64_t num_files)
    : g_(std::max<uint32_t>(1, ranks)),
      next_use_(num_files, kNever),
      last_occ_(num_files, kNever) {}

void FutureStream::Append(uint64_t epoch, const std::vector<std::vector<FileId>>& slots,
                          std::vector<FileId>* changed) {
  Epoch e;
  e.epoch = epoch;
  e.base = next_base_;
  for (const auto& s : slots) e.steps = std::max<uint64_t>(e.steps, s.size());
  e.files.assign(e.steps * g_, kNoFile);
  e.next.assign(e.files.size(), kNever);
  e.done.assign(e.files.size(), 1);
  for (uint32_t g = 0; g < g_ && g < slots.size(); ++g) {
    for (uint64_t k = 0; k < slots[g].size(); ++k) {
      FileId f = slots[g][k];
      if (f >= next_use_.size()) continue;  // not served: a hole, like padding
      e.files[k * g_ + g] = f;
      e.done[k * g_ + g] = 0;
    }
  }
  epochs_.push_back(std::move(e));
  next_base_ += epochs_.back().steps;
  // Chain in time order (the epoch is walked after it is in place so that a
  // link into it resolves). Most links land in this epoch or the one before:
  // test those directly instead of searching.
  Epoch& in = epochs_.back();
  Epoch* before = epochs_.size() > 1 ? &epochs_[epochs_.size() - 2] : nullptr;
  const uint64_t t0 = in.base * g_;
  const uint64_t before_t0 = before != nullptr ? before->base * g_ : 0;
  for (uint64_t i = 0; i < in.files.size(); ++i) {
    FileId f = in.files[i];
    if (f == kNoFile) continue;
    uint64_t t = t0 + i;
    uint64_t prev = last_occ_[f];
    if (prev != kNever) {
      if (prev >= t0) {
        in.next[prev - t0] = t;
      } else if (before != nullptr && prev >= before_t0) {
        before->next[prev - before_t0] = t;
      } else {
        uint64_t off;
        Epoch* pe = EpochOfTime(prev, &off);
        if (pe != nullptr) pe->next[off] = t;
      }
    }
    last_occ_[f] = t;
    if (next_use_[f] == kNever) {
      next_use_[f] = t;
      changed->push_back(f);
    }
  }
}

void FutureStream::DropFront() {
  assert(!epochs_.empty());
  const Epoch& e = epochs_.front();
  uint64_t t0 = e.base * g_;
  for (uint64_t i = 0; i < e.files.size(); ++i) {
    FileId f = e.files[i];
    if (f != kNoFile && last_occ_[f] == t0 + i) last_occ_[f] = kNever;
  }
  epochs_.pop_front();
}

void FutureStream::Reset(uint64_t base, std::vector<FileId>* changed) {
  for (const Epoch& e : epochs_) {
    for (FileId f : e.files) {
      if (f == kNoFile) continue;
      last_occ_[f] = kNever;
      if (next_use_[f] != kNever) {
        next_use_[f] = kNever;
        changed->push_back(f);
      }
    }
  }
  epochs_.clear();
  next_base_ = base;
}

const FutureStream::Epoch* FutureStream::EpochOfTime(uint64_t t, uint64_t* off) const {
  uint64_t s = t / g_;
  if (epochs_.empty() || s < epochs_.front().base || s >= next_base_) return nullptr;
  // Epochs are contiguous and sorted by base; many only for tiny datasets.
  auto it = std::upper_bound(epochs_.begin(), epochs_.end(), s,
                             [](uint64_t step, const Epoch& e) { return step < e.base; });
  const Epoch& e = *(it - 1);
  if (s >= e.base + e.steps) return nullptr;
  *off = t - e.base * g_;
  return &e;
}

FutureStream::Epoch* FutureStream::EpochOfTime(uint64_t t, uint64_t* off) {
  return const_cast<Epoch*>(static_cast<const FutureStream*>(this)->EpochOfTime(t, off));
}

FileId FutureStream::FileAt(uint64_t t) const {
  uint64_t off;
  const Epoch* e = EpochOfTime(t, &off);
  return e == nullptr ? kNoFile : e->files[off];
}

bool FutureStream::Satisfied(uint64_t t) const {
  uint64_t off;
  const Epoch* e = EpochOfTime(t, &off);
  return e == nullptr || e->done[off] != 0;
}

uint64_t FutureStream::NextOccurrence(uint64_t t) const {
  uint64_t off;
  const Epoch* e = EpochOfTime(t, &off);
  return e == nullptr ? kNever : e->next[off];
}

bool FutureStream::Locate(uint64_t s, uint64_t* epoch, uint64_t* offset) const {
  for (const Epoch& e : epochs_) {
    if (s >= e.base && s < e.base + e.steps) {
      *epoch = e.epoch;
      *offset = s - e.base;
      return true;
    }
  }
  return false;
}

std::vector<std::vector<FileId>> FutureStream::Slots(uint64_t epoch) const {
  std::vector<std::vector<FileId>> out;
  for (const Epoch& e : epochs_) {
    if (e.epoch != epoch) continue;
    out.assign(g_, std::vector<FileId>(e.steps, kNoFile));
    for (uint64_t i = 0; i < e.files.size(); ++i) out[i % g_][i / g_] = e.files[i];
  }
  return out;
}

uint64_t FutureStream::EpochBase(uint64_t epoch) const {
  for (const Epoch& e : epochs_) {
    if (e.epoch == epoch) return e.base;
  }
  return kNever;
}

bool FutureStream::Satisfy(uint64_t t) {
  uint64_t off;
  Epoch* e = EpochOfTime(t, &off);
  if (e == nullptr || e->done[off]) return false;
  e->done[off] = 1;
  FileId f = e->files[off];
  if (next_use_[f] != t) return false;  // a later entry went first; the earliest stays
  uint64_t n = e->next[off];
  while (n != kNever && Satisfied(n)) n = NextOccurrence(n);
  next_use_[f] = n;
  return true;
}

}  // namespace clairfs::prefetch
