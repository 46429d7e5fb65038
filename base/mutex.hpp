// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with
// Clang's thread-safety annotations, so the compiler checks what a class's
// comments say ("guards the members below"). Clang builds warn with
// -Wthread-safety (an error there, see CMakeLists.txt); other compilers see
// plain types.
//
// A member written CLAIRFS_GUARDED_BY(mu_) may be touched only while mu_ is
// held (CLAIRFS_PT_GUARDED_BY: what a pointer member points to); a function marked
// CLAIRFS_REQUIRES(mu_) is called with it held. Wait on a CondVar in a loop over the condition (not
// with a predicate lambda: the analysis cannot see that a lambda runs under the lock).
//
// A function handed its caller's MutexLock (CLAIRFS_REQUIRES(mu_)) that lets
// the lock go for a while does so with a MutexUnlock: Clang 14 cannot follow
// a MutexLock passed as an argument, so lock->Unlock() there would not count.
// A callback run under the lock (a walk's visitor lambda) starts with
// mu_.AssertHeld(): the analysis cannot see where a lambda runs, so
// AssertHeld tells it, and checks at run time that it is so.
//
// Mutex and SharedMutex are thread-safe; a MutexLock (and a MutexUnlock, a
// ReaderLock, a WriterLock) belongs to the thread that made it.
#pragma once

#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>

#if defined(__clang__)
#define CLAIRFS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define CLAIRFS_THREAD_ANNOTATION(x)
#endif

#define CLAIRFS_CAPABILITY(x) CLAIRFS_THREAD_ANNOTATION(capability(x))
#define CLAIRFS_SCOPED_CAPABILITY CLAIRFS_THREAD_ANNOTATION(scoped_lockable)
#define CLAIRFS_GUARDED_BY(x) CLAIRFS_THREAD_ANNOTATION(guarded_by(x))
#define CLAIRFS_PT_GUARDED_BY(x) CLAIRFS_THREAD_ANNOTATION(pt_guarded_by(x))
#define CLAIRFS_REQUIRES(...) CLAIRFS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define CLAIRFS_ACQUIRE(...) CLAIRFS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define CLAIRFS_ACQUIRE_SHARED(...) \
  CLAIRFS_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define CLAIRFS_RELEASE(...) CLAIRFS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define CLAIRFS_EXCLUDES(...) CLAIRFS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define CLAIRFS_ASSERT_CAPABILITY(x) CLAIRFS_THREAD_ANNOTATION(assert_capability(x))

namespace clairfs {

class CLAIRFS_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Aborts unless the calling thread holds the mutex (in every build); from
  // here on the analysis takes it as held.
  void AssertHeld() const CLAIRFS_ASSERT_CAPABILITY(this) {
    if (holder_.load(std::memory_order_relaxed) != std::this_thread::get_id()) {
      std::fputs("clairfs: Mutex::AssertHeld by a thread that does not hold it\n", stderr);
      std::abort();
    }
  }

 private:
  friend class MutexLock;
  friend class MutexUnlock;
  friend class CondVar;
  void Took() { holder_.store(std::this_thread::get_id(), std::memory_order_relaxed); }
  void Leaving() { holder_.store(std::thread::id(), std::memory_order_relaxed); }

  std::mutex mu_;
  std::atomic<std::thread::id> holder_{};  // for AssertHeld only
};

// Holds a Mutex from construction to destruction; Unlock() and Lock() let it
// go and take it again in between (e.g. around a callback).
class CLAIRFS_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) CLAIRFS_ACQUIRE(mu) : mu_(mu), lock_(mu->mu_) { mu_->Took(); }
  ~MutexLock() CLAIRFS_RELEASE() {
    if (lock_.owns_lock()) mu_->Leaving();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() CLAIRFS_RELEASE() {
    mu_->Leaving();
    lock_.unlock();
  }
  void Lock() CLAIRFS_ACQUIRE() {
    lock_.lock();
    mu_->Took();
  }

 private:
  friend class CondVar;
  friend class MutexUnlock;
  Mutex* const mu_;
  std::unique_lock<std::mutex> lock_;
};

// Lets go of `*lock`, which holds `*mu`, from construction until Relock() or
// destruction, whichever comes first: the analysis sees `mu` released there.
class CLAIRFS_SCOPED_CAPABILITY MutexUnlock {
 public:
  MutexUnlock(MutexLock* lock, Mutex* mu) CLAIRFS_RELEASE(mu) : lock_(lock) {
    if (lock->mu_ != mu) {
      std::fputs("clairfs: MutexUnlock of a Mutex the MutexLock does not hold\n", stderr);
      std::abort();
    }
    lock_->Unlock();
  }
  ~MutexUnlock() CLAIRFS_RELEASE() {
    if (!relocked_) lock_->Lock();
  }
  MutexUnlock(const MutexUnlock&) = delete;
  MutexUnlock& operator=(const MutexUnlock&) = delete;

  // Takes the lock again before the scope ends (to the analysis, the end of
  // this scope's release).
  void Relock() CLAIRFS_RELEASE() {
    assert(!relocked_);
    lock_->Lock();
    relocked_ = true;
  }

 private:
  MutexLock* const lock_;
  bool relocked_ = false;
};

// A reader-writer lock: WriterLock holds it alone, ReaderLock shares it with
// other readers. A member CLAIRFS_GUARDED_BY it is read under either, written
// under a WriterLock only.
class CLAIRFS_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

 private:
  friend class ReaderLock;
  friend class WriterLock;
  std::shared_mutex mu_;
};

class CLAIRFS_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) CLAIRFS_ACQUIRE_SHARED(mu) : lock_(mu->mu_) {}
  ~ReaderLock() CLAIRFS_RELEASE() {}
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  std::shared_lock<std::shared_mutex> lock_;
};

class CLAIRFS_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) CLAIRFS_ACQUIRE(mu) : lock_(mu->mu_) {}
  ~WriterLock() CLAIRFS_RELEASE() {}
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  std::unique_lock<std::shared_mutex> lock_;
};

class CondVar {
 public:
  // Releases the lock while waiting; holds it again on return. May wake
  // without a notification: wait in a loop over the condition.
  void Wait(MutexLock* lock) {
    lock->mu_->Leaving();
    cv_.wait(lock->lock_);
    lock->mu_->Took();
  }
  // The same, until `deadline` at the latest; false once it has passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(MutexLock* lock, std::chrono::time_point<Clock, Duration> deadline) {
    lock->mu_->Leaving();
    const std::cv_status status = cv_.wait_until(lock->lock_, deadline);
    lock->mu_->Took();
    return status == std::cv_status::no_timeout;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace clairfs
