#include "prefetch/planner/resident_set.hpp"

#include <limits>

#include "prefetch/planner/future_stream.hpp"

namespace clairfs::prefetch {

ResidentSet::State ResidentSet::state(FileId f) const {
  auto it = held_.find(f);
  if (it == held_.end()) return State::kAbsent;
  return it->second.resident ? State::kResident : State::kInFlight;
}

uint64_t ResidentSet::bytes(FileId f) const {
  auto it = held_.find(f);
  return it == held_.end() ? 0 : it->second.bytes;
}

uint64_t ResidentSet::ResidentBytes(FileId f) const {
  auto it = held_.find(f);
  return it == held_.end() || !it->second.resident ? kNever : it->second.bytes;
}

bool ResidentSet::StartFetch(FileId f, uint64_t bytes) {
  if (held_.count(f) != 0 || bytes > free()) return false;
  held_[f] = Held{bytes, 0, 0, false};
  in_flight_bytes_ += bytes;
  return true;
}

bool ResidentSet::Finish(FileId f, uint64_t bytes, uint64_t key) {
  auto it = held_.find(f);
  uint64_t already = it == held_.end() ? 0 : it->second.bytes;
  if (bytes > already && bytes - already > free()) return false;
  if (it != held_.end()) {
    Held& h = it->second;
    if (h.resident) {
      order_.erase(Key{h.key, h.age, f});
      resident_bytes_ -= h.bytes;
    } else {
      in_flight_bytes_ -= h.bytes;
    }
  }
  // Ages count down so that older files sort after newer ones at equal keys.
  Held h{bytes, key, std::numeric_limits<uint64_t>::max() - age_counter_++, true};
  held_[f] = h;
  resident_bytes_ += bytes;
  order_.insert(Key{h.key, h.age, f});
  return true;
}

void ResidentSet::Remove(FileId f) {
  auto it = held_.find(f);
  if (it == held_.end()) return;
  const Held& h = it->second;
  if (h.resident) {
    order_.erase(Key{h.key, h.age, f});
    resident_bytes_ -= h.bytes;
  } else {
    in_flight_bytes_ -= h.bytes;
  }
  held_.erase(it);
}

void ResidentSet::Rekey(FileId f, uint64_t key) {
  auto it = held_.find(f);
  if (it == held_.end() || !it->second.resident || it->second.key == key) return;
  Held& h = it->second;
  order_.erase(Key{h.key, h.age, f});
  h.key = key;
  order_.insert(Key{h.key, h.age, f});
}

bool ResidentSet::PickVictims(uint64_t bytes, uint64_t sooner_than,
                              std::vector<FileId>* victims) const {
  victims->clear();
  if (bytes > budget_) return false;
  uint64_t have = free();
  for (auto it = order_.rbegin(); it != order_.rend() && have < bytes; ++it) {
    uint64_t key = std::get<0>(*it);
    if (key <= sooner_than && key != kNever) break;  // sorted: no later one qualifies
    FileId f = std::get<2>(*it);
    victims->push_back(f);
    have += held_.at(f).bytes;
  }
  if (have < bytes) {
    victims->clear();
    return false;
  }
  return true;
}

FileId ResidentSet::Furthest() const {
  return order_.empty() ? kNoFile : std::get<2>(*order_.rbegin());
}

}  // namespace clairfs::prefetch
