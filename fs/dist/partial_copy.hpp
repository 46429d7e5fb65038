// PartialCopy: a pack's local copy while it is being made. Staging writes it
// in order; reads of the pack that went to the dataset directory before
// staging got there write their bytes into it too, so that staging reads only
// the rest: each byte of the pack is read from the shared file system once.
// It knows which ranges hold the pack's bytes, and answers reads of those.
// Whoever is about to read a range from the dataset directory claims it
// first, so that staging and a read never fetch the same bytes: the other
// waits for them instead (Claim, then Write or Abandon; AwaitPresent).
//
// A failed write (a full disk) disables it: nothing counts as present any
// more and later writes are refused, so no read is answered from a copy that
// may have holes. The file is closed, never removed, by the destructor.
//
// Thread-safe. A range counts as present only after its bytes are written.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.hpp"
#include "base/status.hpp"
#include "fs/store/range_set.hpp"

namespace clairfs::fs {

class PartialCopy {
 public:
  // Creates (or truncates) `path`.
  static Result<std::unique_ptr<PartialCopy>> Create(std::string path);
  ~PartialCopy();
  PartialCopy(const PartialCopy&) = delete;
  PartialCopy& operator=(const PartialCopy&) = delete;

  const std::string& path() const { return path_; }
  // Writes the pack's bytes [offset, offset + size); they are present once
  // written. An error disables the copy.
  Status Write(uint64_t offset, const void* data, size_t size) CLAIRFS_EXCLUDES(mu_);
  // Claims the parts of [lo, hi) that are neither present nor claimed, in
  // order: the caller reads each from the dataset directory, then Writes it
  // (which releases the claim) or Abandons it. Once disabled: all of it,
  // and nothing is recorded.
  std::vector<std::pair<uint64_t, uint64_t>> Claim(uint64_t lo, uint64_t hi) CLAIRFS_EXCLUDES(mu_);
  void Abandon(uint64_t lo, uint64_t hi) CLAIRFS_EXCLUDES(mu_);
  // Waits while [lo, hi) is not all present but every absent byte of it is
  // claimed (under way); true once all present, false when a part is
  // neither (its claim abandoned) or the copy is disabled.
  bool AwaitPresent(uint64_t lo, uint64_t hi) const CLAIRFS_EXCLUDES(mu_);
  // [lo, hi) is all present now (never on a disabled copy).
  bool Holds(uint64_t lo, uint64_t hi) const CLAIRFS_EXCLUDES(mu_);
  // Fills `dst` with the pack's bytes [lo, hi): claims what nobody is
  // fetching, reads it with `fetch` and writes it into the copy, waits for
  // what others are fetching and reads that from the copy. On a disabled
  // copy the rest is fetched and not kept. A fetch error is returned (its
  // claims abandoned); a write error is not (the bytes are in `dst`), but
  // counted in `counts`.
  struct FillCounts {
    uint64_t written = 0;  // bytes fetched here and written into the copy
    Status write_error;    // the first failed write
  };
  using FetchFn = std::function<Status(uint64_t offset, size_t size, char* dst)>;
  Status Fill(uint64_t lo, uint64_t hi, char* dst, const FetchFn& fetch, FillCounts* counts)
      CLAIRFS_EXCLUDES(mu_);
  // Brings into the copy the bytes of [lo, hi) that no one has brought or is
  // bringing: claims them, reads them with `fetch` into `buf` (hi - lo
  // bytes), writes them. Waits for nothing and reads nothing back: what is
  // present or claimed elsewhere is left as it is (staging a range ahead of
  // the job, whose own reads may be bringing parts of it). Nothing on a
  // disabled copy. A fetch error is returned (its claims abandoned).
  Status Keep(uint64_t lo, uint64_t hi, char* buf, const FetchFn& fetch, FillCounts* counts)
      CLAIRFS_EXCLUDES(mu_);
  bool disabled() const CLAIRFS_EXCLUDES(mu_);
  void Disable() CLAIRFS_EXCLUDES(mu_);

 private:
  PartialCopy(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  // Reads bytes written into the copy.
  Status ReadExact(uint64_t offset, size_t size, void* dst) const;
  // Fetches each of `claims` (this caller's, within [lo, ...)) into `dst`
  // and writes it into the copy; on a fetch error the claims left are
  // abandoned and the error returned.
  Status FetchClaimed(const std::vector<std::pair<uint64_t, uint64_t>>& claims, uint64_t lo,
                      char* dst, const FetchFn& fetch, FillCounts* counts) CLAIRFS_EXCLUDES(mu_);

  const std::string path_;
  const int fd_;
  mutable Mutex mu_;
  mutable CondVar changed_;  // a claim was written or abandoned, or the copy disabled
  RangeSet present_ CLAIRFS_GUARDED_BY(mu_);
  RangeSet claimed_ CLAIRFS_GUARDED_BY(mu_);
  bool disabled_ CLAIRFS_GUARDED_BY(mu_) = false;
};

}  // namespace clairfs::fs
