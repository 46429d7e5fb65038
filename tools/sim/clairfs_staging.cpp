// ClairfsSource's staging: the copying threads (in pack order or the first
// epoch's first-use ranges) and files landing on their home's SSD, or on a
// replica's. The reads and fetches are in clairfs_source.cpp.
#include <deque>
#include <utility>
#include <vector>

#include "tools/sim/clairfs_source.hpp"

namespace clairfs::sim {

void ClairfsSource::StageNext(uint32_t node) {
  Node& k = node_[node];
  if (k.stage_paused) return;
  // No pause at all with stage_yield 0, as the daemon's stage_yield_ms 0.
  if (spec_.stage_yield > 0 && k.source_reads > 0) {  // resumed when the last of them ends
    k.stage_paused = true;
    return;
  }
  const double resume = k.last_source_read + spec_.stage_yield;
  if (spec_.stage_yield > 0 && loop_->now() < resume) {
    k.stage_paused = true;
    loop_->After(resume - loop_->now(), [this, node] {
      node_[node].stage_paused = false;
      StageNext(node);
    });
    return;
  }
  for (uint32_t s = 0; s < k.streams.size(); ++s) StageChunk(node, s);
}

void ClairfsSource::StageChunk(uint32_t node, uint32_t stream) {
  Node& k = node_[node];
  Stream& s = k.streams[stream];
  if (s.busy) return;
  // The next file of the stream's partition (in its pack's order) not on
  // the SSD yet; a stream done with its partition takes the next waiting one.
  const std::vector<uint64_t>* pack = nullptr;
  uint32_t copy = 0;  // which of the partition's copies this node's is
  for (;;) {
    if (s.partition >= 0) {
      pack = &partition_files_[s.partition];
      copy = CopyOf(node, static_cast<uint32_t>(s.partition));
      while (s.cursor < pack->size() && StateOf(copy, (*pack)[s.cursor]) != kNotStaged) ++s.cursor;
      if (s.cursor < pack->size()) break;
    }
    // The daemon's Worker: partitions to finish, then the first-use
    // ranges, then the partitions in turn.
    std::deque<uint32_t>* from = &k.finish;
    if (from->empty() && k.next_unit < k.units.size()) {
      if (StageUnit(node, stream)) return;
      continue;  // nothing left to read in it; its partition may be finished next
    }
    if (from->empty()) from = &k.to_stage;
    if (from->empty()) return;
    s.partition = from->front();
    s.cursor = 0;
    from->pop_front();
  }
  // A chunk: the files next to each other in the pack from there that are
  // not on the SSD, up to stage_chunk bytes (at least one file); with
  // stage_whole_chunks, the files already there or on their way are read
  // again instead of ending it.
  std::vector<uint64_t> chunk;
  uint64_t bytes = 0;
  size_t i = s.cursor;
  for (; i < pack->size() && (spec_.stage_whole_chunks || StateOf(copy, (*pack)[i]) == kNotStaged);
       ++i) {
    const uint64_t f = (*pack)[i];
    if (!chunk.empty() && bytes + (*bytes_)[f] > spec_.stage_chunk) break;
    bytes += (*bytes_)[f];
    if (StateOf(copy, f) != kNotStaged) continue;  // read again, its bytes dropped
    chunk.push_back(f);
    StateOf(copy, f) = kStaging;
  }
  s.cursor = i;
  s.busy = true;
  fs_->Transfer(
      bytes,
      [this, node, stream, bytes, copy, chunk = std::move(chunk)]() mutable {
        auto write = [this, node, stream, bytes, copy, chunk = std::move(chunk)]() mutable {
          node_[node].written += bytes;
          node_[node].ssd->Transfer(bytes, [this, node, stream, copy, chunk = std::move(chunk)] {
            for (uint64_t f : chunk) {
              if (copy == 0) {
                Landed(f);
              } else {
                ReplicaLanded(copy, f);
              }
            }
            node_[node].streams[stream].busy = false;
            StageNext(node);
          });
        };
        Cpu(node, static_cast<double>(bytes) * spec_.cpu_per_staged_byte, std::move(write));
      },
      static_cast<int>(node));
}

bool ClairfsSource::StageUnit(uint32_t node, uint32_t stream) {
  Node& k = node_[node];
  const FirstUseUnit u = k.units[k.next_unit++];
  const std::vector<uint64_t>& pack = partition_files_[u.partition];
  const uint32_t copy = CopyOf(node, u.partition);
  std::vector<uint64_t> files;
  uint64_t bytes = 0;
  const size_t piece = u.offset / PieceSize();
  if (u.piece) {
    // A piece of a large file: the first piece starts it, the others follow
    // it; a file a read brought whole (or is bringing) needs no more, nor a
    // piece a read of it took.
    const uint64_t f = pack[u.begin];
    const uint64_t pieces = ((*bytes_)[f] + PieceSize() - 1) / PieceSize();
    if (copy > 0) {
      // A replica's copy: nothing reads it, so each of its pieces is copied
      // by its own range.
      if (StateOf(copy, f) == kNotStaged) {
        StateOf(copy, f) = kStaging;
        replica_pieces_[(copy - 1) * bytes_->size() + f] = pieces;
      }
      files.push_back(f);
      bytes = u.bytes;
    } else {
      if (state_[f] == kNotStaged) {
        state_[f] = kStaging;
        Pieces& p = pieces_[f];
        p.state.assign(pieces, kNotStaged);
        p.left = p.state.size();
      }
      auto it = pieces_.find(f);
      if (it != pieces_.end() && it->second.state[piece] == kNotStaged) {
        it->second.state[piece] = kStaging;
        files.push_back(f);
        bytes = u.bytes;
      }
    }
  } else {
    for (size_t i = u.begin; i < u.end; ++i) {
      const uint64_t f = pack[i];
      if (StateOf(copy, f) != kNotStaged) continue;
      files.push_back(f);
      bytes += (*bytes_)[f];
      StateOf(copy, f) = kStaging;
    }
  }
  if (files.empty()) {
    UnitDone(node, u.partition);
    return false;
  }
  k.streams[stream].busy = true;
  const bool is_piece = u.piece;
  const uint32_t partition = u.partition;
  fs_->Transfer(
      bytes,
      [this, node, stream, bytes, is_piece, piece, partition, copy,
       files = std::move(files)]() mutable {
        auto write = [this, node, stream, bytes, is_piece, piece, partition, copy,
                      files = std::move(files)]() mutable {
          node_[node].written += bytes;
          node_[node].ssd->Transfer(bytes, [this, node, stream, is_piece, piece, partition, copy,
                                            files = std::move(files)] {
            for (uint64_t f : files) {
              if (copy > 0) {
                if (is_piece) {
                  ReplicaPieceLanded(copy, f);
                } else {
                  ReplicaLanded(copy, f);
                }
              } else if (is_piece) {
                PieceLanded(f, piece);
              } else {
                Landed(f);
              }
            }
            node_[node].streams[stream].busy = false;
            UnitDone(node, partition);
            StageNext(node);
          });
        };
        Cpu(node, static_cast<double>(bytes) * spec_.cpu_per_staged_byte, std::move(write));
      },
      static_cast<int>(node));
  return true;
}

void ClairfsSource::UnitDone(uint32_t node, uint32_t partition) {
  if (--UnitsLeft(CopyOf(node, partition), partition) == 0) node_[node].finish.push_back(partition);
}

void ClairfsSource::Landed(uint64_t file) {
  if (state_[file] == kOnSsd) return;
  state_[file] = kOnSsd;
  if (landed_order_.size() < 64) landed_order_.push_back(file);
  --files_left_;
  CheckStaged();
  auto it = landing_.find(file);
  if (it == landing_.end()) return;
  for (auto& read : it->second) loop_->After(0, std::move(read));
  landing_.erase(it);
}

void ClairfsSource::PieceLanded(uint64_t file, size_t piece) {
  Pieces& p = pieces_.at(file);
  p.state[piece] = kOnSsd;
  if (--p.left > 0) return;
  pieces_.erase(file);
  Landed(file);
}

void ClairfsSource::ReplicaLanded(uint32_t copy, uint64_t file) {
  char& state = StateOf(copy, file);
  if (state == kOnSsd) return;
  state = kOnSsd;
  --replica_files_left_;
  CheckStaged();
}

void ClairfsSource::ReplicaPieceLanded(uint32_t copy, uint64_t file) {
  auto it = replica_pieces_.find((copy - 1) * bytes_->size() + file);
  if (--it->second > 0) return;
  replica_pieces_.erase(it);
  ReplicaLanded(copy, file);
}

void ClairfsSource::CheckStaged() {
  if (files_left_ == 0 && replica_files_left_ == 0) staged_at_ = loop_->now() - stage_start_;
}

}  // namespace clairfs::sim
