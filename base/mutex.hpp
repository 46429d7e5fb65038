// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with
// Clang's thread-safety annotations, so the compiler checks what a class's
// comments say ("guards the members below"). Clang builds warn with
// -Wthread-safety (an error there, see CMakeLists.txt); other compilers see
// plain types.
//
// A member written CLAIRFS_GUARDED_BY(mu_) may be touched only while mu_ is
// held (CLAIRFS_PT_GUARDED_BY: what a pointer member points to); a function marked CLAIRFS_REQUIRES(mu_) is called with it held. Wait
// on a CondVar in a loop over the condition (not with a predicate lambda: the
// analysis cannot see that a lambda runs under the lock).
//
// Mutex is thread-safe; a MutexLock belongs to the thread that made it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

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
#define CLAIRFS_RELEASE(...) CLAIRFS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define CLAIRFS_EXCLUDES(...) CLAIRFS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

namespace clairfs {

class CLAIRFS_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction; Unlock() and Lock() let it
// go and take it again in between (e.g. around a callback).
class CLAIRFS_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) CLAIRFS_ACQUIRE(mu) : lock_(mu->mu_) {}
  ~MutexLock() CLAIRFS_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() CLAIRFS_RELEASE() { lock_.unlock(); }
  void Lock() CLAIRFS_ACQUIRE() { lock_.lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

class CondVar {
 public:
  // Releases the lock while waiting; holds it again on return. May wake
  // without a notification: wait in a loop over the condition.
  void Wait(MutexLock* lock) { cv_.wait(lock->lock_); }
  // The same, until `deadline` at the latest; false once it has passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(MutexLock* lock, std::chrono::time_point<Clock, Duration> deadline) {
    return cv_.wait_until(lock->lock_, deadline) == std::cv_status::no_timeout;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace clairfs
